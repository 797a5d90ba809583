"""Conditioning modules whose inputs have fewer axes than their names suggest."""

import math

import torch
import torch.nn as nn


class SinusoidalTime(nn.Module):
    """One time value per sample, spread over sines and cosines."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        half = self.dim // 2
        freqs = torch.exp(torch.arange(half, dtype=torch.float32) * -(math.log(10000.0) / (half - 1)))
        angles = 1000.0 * x.unsqueeze(1) * freqs.unsqueeze(0)
        return torch.cat((angles.sin(), angles.cos()), dim=-1)


class ModulatedNorm(nn.Module):
    """A norm whose scale and shift come from a vector per sample, given as emb (default None)."""

    def __init__(self, dim: int):
        super().__init__()
        self.to_mod = nn.Linear(dim, 2 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)

    def forward(self, x, emb=None):
        scale, shift = self.to_mod(torch.nn.functional.silu(emb)).chunk(2, dim=1)
        return self.norm(x) * (1 + scale[:, None]) + shift[:, None]


class TimedBlock(nn.Module):
    """A block given the time's embedding (not the time) as t."""

    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Linear(dim, dim)
        self.mlp = nn.Linear(dim, dim)

    def forward(self, x, t):
        return x + self.mlp(x) * torch.sigmoid(self.gate(nn.functional.silu(t)))[:, None, :]


class HeadsViewedWrong(nn.Module):
    """Splits the width into heads with the width itself as the head size: fails at any rank."""

    def __init__(self, dim: int, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.heads, C).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        w = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return (w @ v).transpose(1, 2).reshape(B, T, C)


class ShiftedIds(nn.Module):
    """Keeps row 0 of its table for padding: every id moves up one before it is looked up."""

    def __init__(self, dim: int, n_chars: int = 256):
        super().__init__()
        self.table = nn.Embedding(n_chars + 1, dim)

    def forward(self, chars):
        chars = chars + 1
        return self.table(chars)


class ShiftedTwice(ShiftedIds):
    """Moves every id up two, past the end of a table of one spare row: no range of ours fits."""

    def forward(self, chars):
        chars = chars + 2
        return self.table(chars)


class ShapeBranch(nn.Module):
    """Reads its sizes only on the path an image takes."""

    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        shape = x.shape
        if len(shape) == 4:
            B, C, H, W = shape
            x = x.flatten(2).transpose(1, 2)
        return self.proj(x).transpose(1, 2).reshape(B, C, H, W)


class ChannelScale(nn.Module):
    """A learned scale per channel of a signal, channels first."""

    def __init__(self, dim: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, dim, 1))

    def forward(self, x):
        x = x.reshape(x.shape[0], x.shape[1], -1)
        return x * self.alpha


class LazyHead(nn.Module):
    """A layer that learns its width from its first input."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.fc = nn.LazyLinear(classes)

    def forward(self, feats):
        return self.fc(feats)


class PairedVectors(nn.Module):
    """An MLP over a data vector and a condition vector per sample, side by side."""

    def __init__(self, dim: int):
        super().__init__()
        self.cond = nn.Linear(dim, dim)
        self.mix = nn.Linear(2 * dim, dim)

    def forward(self, x, c):
        return self.mix(torch.cat([x, self.cond(c)], dim=1))
