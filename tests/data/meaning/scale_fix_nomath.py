"""attention-scale fixes in a file that does not import math: the factor is written with ``**``.
Built as ``Model(n_embd, n_head)`` and called with ``x`` (B, T, C)."""

from __future__ import annotations

import torch
import torch.nn as nn


class _Base(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head, self.d_k = n_head, n_embd // n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)


class UnscaledBmm(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.reshape(B, T, self.n_head, self.d_k).transpose(1, 2).reshape(B * self.n_head, T, self.d_k)
                   for t in self.c_attn(x).split(C, dim=2))
        w = torch.bmm(q, k.transpose(1, 2))  # BUG: attention-scale
        y = torch.bmm(w.softmax(dim=-1), v).view(B, self.n_head, T, self.d_k)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class ScaleByHeadCount(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, self.d_k).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * self.n_head ** -0.5  # BUG: attention-scale
        return self.c_proj((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


BUGGY = [UnscaledBmm, ScaleByHeadCount]
NO_FIX: list = []
