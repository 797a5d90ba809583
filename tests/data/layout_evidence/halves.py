"""Code that splits a head or a width in halves (rotary pairs of halves, a gated unit): at an
odd probe size the halves do not match."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RotaryHalves(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = (z.view(b, t, self.heads, d).transpose(1, 2) for z in self.qkv(x).chunk(3, -1))
        half = d // 2
        freqs = 1.0 / (10000 ** (torch.arange(half) / half))
        angles = torch.arange(t)[:, None] * freqs[None, :]
        cos, sin = angles.cos(), angles.sin()
        q1, q2 = q.chunk(2, dim=-1)
        k1, k2 = k.chunk(2, dim=-1)
        q = torch.cat((q1 * cos - q2 * sin, q1 * sin + q2 * cos), dim=-1)
        k = torch.cat((k1 * cos - k2 * sin, k1 * sin + k2 * cos), dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, c))


class GatedHalves(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        return torch.cat([value * torch.sigmoid(gate), value], dim=-1)


class RotaryPairs(nn.Module):
    """Rotary positions over the features taken in pairs (``reshape(..., -1, 2)``), on a
    ``(B, T, H, d)`` input made inside the module."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q = self.proj(x).view(b, t, self.heads, c // self.heads)
        pairs = q.float().reshape(*q.shape[:-1], -1, 2)
        angles = torch.arange(t)[:, None] / (10000 ** (torch.arange(pairs.shape[-2]) / pairs.shape[-2]))
        cos, sin = angles.cos()[None, :, None, :], angles.sin()[None, :, None, :]
        turned = torch.stack((pairs[..., 0] * cos - pairs[..., 1] * sin,
                              pairs[..., 0] * sin + pairs[..., 1] * cos), dim=-1)
        return turned.flatten(3).reshape(b, t, c)


class StepFeatures(nn.Module):
    """A diffusion step as sines and cosines of n_channels // 8 frequencies, fed to a layer of
    n_channels // 4 inputs: the two agree only at a width that divides by 8."""

    def __init__(self, n_channels):
        super().__init__()
        self.n_channels = n_channels
        self.inner = nn.Linear(n_channels // 4, n_channels)
        self.outer = nn.Linear(n_channels, n_channels)

    def forward(self, t):
        count = self.n_channels // 8
        freqs = torch.exp(-math.log(10_000) * torch.arange(count, dtype=torch.float32) / count)
        angles = t.float()[:, None] * freqs[None, :]
        features = torch.cat((angles.sin(), angles.cos()), dim=1)
        return self.outer(F.silu(self.inner(features)))
