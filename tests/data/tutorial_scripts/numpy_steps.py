"""A numpy walk-through moved to torch step by step: arrays made in numpy, the scale a numpy
float, a hand-written softmax, float64 throughout, then multi-head with reshape and swapaxes."""

import numpy as np
import torch

rng = np.random.default_rng(0)
seq_len, d_model, n_heads = 4, 8, 2
d_k = d_model // n_heads

X = torch.from_numpy(rng.normal(size=(seq_len, d_model)))
W_q = torch.from_numpy(rng.normal(size=(d_model, d_model)))
W_k = torch.from_numpy(rng.normal(size=(d_model, d_model)))
W_v = torch.from_numpy(rng.normal(size=(d_model, d_model)))


def softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


Q, K, V = X @ W_q, X @ W_k, X @ W_v
scores = Q @ K.T / np.sqrt(d_model)
weights = softmax(scores)
Z = weights @ V
print(Z.shape, weights.sum(axis=-1))

Qh = Q.reshape(seq_len, n_heads, d_k).swapaxes(0, 1)
Kh = K.reshape(seq_len, n_heads, d_k).swapaxes(0, 1)
Vh = V.reshape(seq_len, n_heads, d_k).swapaxes(0, 1)
scores_h = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
Zh = softmax(scores_h) @ Vh
out = Zh.swapaxes(0, 1).reshape(seq_len, d_model)
print(out.shape)
