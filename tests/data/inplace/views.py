"""Attention that writes into one of several views in place (a value row zeroed where the mask
says padding): autograd refuses the write, the module runs."""

import torch
import torch.nn as nn


class ZeroedPaddedValues(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        v.mul_(1.0)  # an in-place write into a view chunk made
        w = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5)
        w = w.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        return self.out((w @ v).transpose(1, 2).reshape(B, T, C))


class LeakyZeroedValues(ZeroedPaddedValues):
    """The same with the causal mask built the wrong way round."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        v.mul_(1.0)
        w = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5)
        w = w.masked_fill(torch.ones(T, T, dtype=torch.bool).tril(-1), float("-inf")).softmax(-1)
        return self.out((w @ v).transpose(1, 2).reshape(B, T, C))


class PseudoInverseStart(nn.Module):
    """Attention through an iterated pseudo-inverse whose starting scale is one number over the
    whole batch (the iteration converges whatever it is): the samples stay apart in all but
    rounding."""

    def __init__(self, dim: int, heads: int, iters: int = 8):
        super().__init__()
        self.heads = heads
        self.iters = iters
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        v.mul_(1.0)
        a = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(-1)
        eye = torch.eye(T, dtype=a.dtype)
        z = a.transpose(-2, -1) / (a.abs().sum(-1).max() * a.abs().sum(-2).max())
        for _ in range(self.iters):
            az = a @ z
            z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
        return ((a @ z) @ v).transpose(1, 2).reshape(B, T, C)
