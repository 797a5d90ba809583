"""Seed 002's scaled dot-product attention on an embedded sentence (correct)."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(123)

sentence = 'wow that is crazy'
dc = {s: i for i, s in enumerate(sorted(sentence.replace(',', '').split()))}
encoded_sentence = torch.tensor([dc[s] for s in sentence.replace(',', '').split()])

embedding_size = 16
n_words = encoded_sentence.shape[0]
embed = torch.nn.Embedding(n_words, embedding_size)
embedded_sentence = embed(encoded_sentence).detach()

d_model = embedding_size
d_k = 64
d_v = 64
W_q = nn.Parameter(torch.randn(d_model, d_k))
W_k = nn.Parameter(torch.randn(d_model, d_k))
W_v = nn.Parameter(torch.randn(d_model, d_v))

Q = torch.matmul(embedded_sentence, W_q)
K = torch.matmul(embedded_sentence, W_k)
V = torch.matmul(embedded_sentence, W_v)

scores = torch.matmul(Q, K.T) / np.sqrt(d_k)
attn_weights = F.softmax(scores, dim=-1)
print(attn_weights.shape)
