"""Attention layers of a project, one of which needs a package this machine does not have."""

import math

import torch
import torch.nn as nn

from shapetrace_missing_hashing import LSHAttention


class PlainAttention(nn.Module):
    def __init__(self, scale=None):
        super().__init__()
        self.scale = scale

    def forward(self, q, k, v):
        scale = self.scale or 1.0 / math.sqrt(q.shape[-1])
        weights = torch.softmax(torch.einsum("blhe,bshe->bhls", q, k) * scale, dim=-1)
        return torch.einsum("bhls,bshd->blhd", weights, v)


class HashedLayer(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn = LSHAttention(dim=d_model, heads=n_heads)

    def forward(self, x):
        return self.attn(x)


class HeadsLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads):
        super().__init__()
        self.inner = attention
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, L, _ = x.shape
        q = self.q(x).view(B, L, self.n_heads, -1)
        k = self.k(x).view(B, L, self.n_heads, -1)
        v = self.v(x).view(B, L, self.n_heads, -1)
        return self.out(self.inner(q, k, v).reshape(B, L, -1))
