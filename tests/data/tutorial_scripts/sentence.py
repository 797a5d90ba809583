"""A blog's self-attention from scratch, one sentence at a time (a script: no nn.Module)."""

import torch
import torch.nn.functional as F

sentence = "Life is short, eat dessert first"
dc = {s: i for i, s in enumerate(sorted(sentence.replace(",", "").split()))}
sentence_int = torch.tensor([dc[s] for s in sentence.replace(",", "").split()])

torch.manual_seed(123)
embed = torch.nn.Embedding(6, 16)
embedded_sentence = embed(sentence_int).detach()
print(embedded_sentence.shape)

d = embedded_sentence.shape[1]
d_q, d_k, d_v = 24, 24, 28
W_query = torch.nn.Parameter(torch.rand(d_q, d))
W_key = torch.nn.Parameter(torch.rand(d_k, d))
W_value = torch.nn.Parameter(torch.rand(d_v, d))

x_2 = embedded_sentence[1]
query_2 = W_query.matmul(x_2)
key_2 = W_key.matmul(x_2)
value_2 = W_value.matmul(x_2)

keys = W_key.matmul(embedded_sentence.T).T
values = W_value.matmul(embedded_sentence.T).T
print("keys.shape:", keys.shape)

omega_24 = query_2.dot(keys[4])
omega_2 = query_2.matmul(keys.T)
attention_weights_2 = F.softmax(omega_2 / d_k ** 0.5, dim=0)
context_vector_2 = attention_weights_2.matmul(values)
print(context_vector_2.shape)

# the whole sentence at once
queries = embedded_sentence @ W_query.T
scores = queries @ keys.T
weights = torch.softmax(scores / d_k ** 0.5, dim=-1)
context = weights @ values
print(context.shape)

# several heads, stacked weights
h = 3
multihead_W_query = torch.nn.Parameter(torch.rand(h, d_q, d))
multihead_W_key = torch.nn.Parameter(torch.rand(h, d_k, d))
multihead_W_value = torch.nn.Parameter(torch.rand(h, d_v, d))
stacked_inputs = embedded_sentence.T.repeat(3, 1, 1)
multihead_queries = torch.bmm(multihead_W_query, stacked_inputs).permute(0, 2, 1)
multihead_keys = torch.bmm(multihead_W_key, stacked_inputs).permute(0, 2, 1)
multihead_values = torch.bmm(multihead_W_value, stacked_inputs).permute(0, 2, 1)
multihead_scores = multihead_queries @ multihead_keys.transpose(-2, -1) / d_k ** 0.5
multihead_weights = multihead_scores.softmax(dim=-1)
multihead_context = (multihead_weights @ multihead_values).permute(1, 0, 2).reshape(6, h * d_v)
print(multihead_context.shape)

# cross-attention with a longer second input
embedded_sentence_2 = torch.rand(8, 16)
keys_c = W_key.matmul(embedded_sentence_2.T).T
values_c = W_value.matmul(embedded_sentence_2.T).T
attn_c = torch.softmax(queries @ keys_c.T / d_k ** 0.5, dim=-1)
print((attn_c @ values_c).shape)
