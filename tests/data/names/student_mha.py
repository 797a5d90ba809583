"""A student's multi-head attention, written to be traced at the student's own sizes."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class StudentMHA(nn.Module):
    """Karpathy-style: separate q, k, v projections, view to heads, transpose."""

    def __init__(self, n_embd, n_head, scale_by_width=False):
        super().__init__()
        self.n_head = n_head
        self.n_embd = n_embd
        self.scale_by_width = scale_by_width
        self.q = nn.Linear(n_embd, n_embd)
        self.k = nn.Linear(n_embd, n_embd)
        self.v = nn.Linear(n_embd, n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q = self.q(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.k(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.v(x).view(B, T, self.n_head, hs).transpose(1, 2)
        scale = math.sqrt(C) if self.scale_by_width else math.sqrt(hs)
        att = (q @ k.transpose(-2, -1)) / scale
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class PlainAttention(nn.Module):
    """No size attributes at all: nothing about the model proves a name."""

    def __init__(self, width, heads):
        super().__init__()
        self._h = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self._h, C // self._h).permute(0, 2, 1, 3) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.permute(0, 2, 1, 3).reshape(B, T, C))
