"""Feed-forward blocks with and without a nonlinearity between their two projections.

Each buggy module marks the line the finding belongs on with ``# HERE``."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class NoActivation(nn.Module):
    def __init__(self, n_embd, dropout=0.0):
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        h = self.drop(self.fc(x))
        return self.proj(h)  # HERE


class SequentialWithoutActivation(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.net = nn.Sequential(  # HERE
            nn.Linear(dim, dim * mult),
            nn.Dropout(0.1),
            nn.Linear(dim * mult, dim),
        )

    def forward(self, x):
        return x + self.net(self.norm(x))


class ScaledHidden(nn.Module):
    """The hidden features reshaped per position and scaled by a learned gain: still linear."""

    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 3 * dim)
        self.gain = nn.Parameter(torch.ones(3 * dim))
        self.down = nn.Linear(3 * dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        h = (self.up(x) * self.gain).reshape(B * T, 3 * C)
        return self.down(h).view(B, T, C)  # HERE


class WithActivation(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class SwiGLU(nn.Module):
    """The gate's product of two projections of the input is the nonlinearity."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(self.w1(x) * self.w3(x))


class LowRank(nn.Module):
    """A factorised projection (narrower middle): a choice, not a slip."""

    def __init__(self, dim, rank=3):
        super().__init__()
        self.down = nn.Linear(dim, rank, bias=False)
        self.up = nn.Linear(rank, dim, bias=False)

    def forward(self, x):
        return x + self.up(self.down(x))


class Modulated(nn.Module):
    """The hidden features scaled by a conditioning input of the forward: not one linear map."""

    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x, scale):
        return self.down(self.up(x) * scale)


class AcrossPositions(nn.Module):
    """A projection of the features, then one across the positions (a Linformer-style key
    projection): two different axes, not a feed-forward."""

    def __init__(self, dim, seq_len, k=5):
        super().__init__()
        self.to_k = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(seq_len, k)

    def forward(self, x):
        k = self.to_k(x).transpose(1, 2)
        return self.proj(k)


class Attention(nn.Module):
    """Values projected wider, weighted by attention, projected back."""

    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C))
