"""Attention layers of a project, one of which needs a package this machine does not have."""

import math

import torch
import torch.nn as nn

from shapetrace_missing_hashing import LSHAttention


class PlainAttention(nn.Module):
    def __init__(self, scale=None):
        super().__init__()
        self.scale = scale

    def forward(self, q, k, v, attn_mask):
        scale = self.scale or 1.0 / math.sqrt(q.shape[-1])
        scores = torch.einsum("blhe,bshe->bhls", q, k) * scale
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask, float("-inf"))
        return torch.einsum("bhls,bshd->blhd", torch.softmax(scores, dim=-1), v)


class FusedAttention(nn.Module):
    """A kernel only a GPU runs."""

    def forward(self, q, k, v, attn_mask):
        torch.cuda.current_stream()
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)


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

    def forward(self, x, attn_mask):
        B, L, _ = x.shape
        q = self.q(x).view(B, L, self.n_heads, -1)
        k = self.k(x).view(B, L, self.n_heads, -1)
        v = self.v(x).view(B, L, self.n_heads, -1)
        return self.out(self.inner(q, k, v, attn_mask).reshape(B, L, -1))
