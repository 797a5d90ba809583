"""An illustrated walk-through as a script: numpy-like steps turned into torch, two tokens,
eight heads in a loop, concatenated and projected."""

import math

import torch

torch.manual_seed(0)
d_model, d_k, n_heads = 512, 64, 8
X = torch.randn(2, d_model)  # "Thinking", "Machines"

W_Q = torch.randn(n_heads, d_model, d_k) / math.sqrt(d_model)
W_K = torch.randn(n_heads, d_model, d_k) / math.sqrt(d_model)
W_V = torch.randn(n_heads, d_model, d_k) / math.sqrt(d_model)
W_O = torch.randn(n_heads * d_k, d_model) / math.sqrt(n_heads * d_k)

heads = []
for i in range(n_heads):
    Q = X @ W_Q[i]
    K = X @ W_K[i]
    V = X @ W_V[i]
    scores = Q @ K.T / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=-1)
    Z = weights @ V
    heads.append(Z)

Z_all = torch.cat(heads, dim=-1)
out = Z_all @ W_O
print(out.shape)

# the same, batched over the heads
Q = torch.einsum("tc,hcd->htd", X, W_Q)
K = torch.einsum("tc,hcd->htd", X, W_K)
V = torch.einsum("tc,hcd->htd", X, W_V)
A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
Z = (A @ V).transpose(0, 1).reshape(2, n_heads * d_k)
print(torch.allclose(Z @ W_O, out, atol=1e-5))
