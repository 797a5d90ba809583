"""Normalisations in many spellings, and their inverted twins: a statistic of a tensor applied
back to it with the power +1 (multiplied by its own RMS or standard deviation) instead of -1.
Correct look-alikes apply a statistic to another tensor (a denormalisation of a model's
output), through a learned scale, or inside a squashing function."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RootMeanSquareNorm(nn.Module):
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.gain * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class RootMeanSquareTimesRms(RootMeanSquareNorm):
    BUG = "inverted-norm"

    def forward(self, x):
        out = x / torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # BUG
        return out * self.gain


class PowerHalfNorm(nn.Module):
    """The mean square in float32, taken to the power -1/2, as half-precision code writes it."""

    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = (x * x).mean(dim=-1, keepdim=True)
        x = x * (variance + 1e-5) ** -0.5
        return self.weight * x


class PowerHalfPositive(PowerHalfNorm):
    BUG = "inverted-norm"

    def forward(self, x):
        variance = (x * x).mean(dim=-1, keepdim=True)
        x = x * (variance + 1e-5) ** 0.5  # BUG
        return self.weight * x


class HandLayerNorm(nn.Module):
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.a = nn.Parameter(torch.ones(dim))
        self.b = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.a * (x - mean) / torch.sqrt(var + self.eps) + self.b


class HandLayerNormTimesStd(HandLayerNorm):
    BUG = "inverted-norm"

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a * (x - mean) * (std + self.eps) + self.b  # BUG


class UnitVectors(nn.Module):
    """Rows scaled to unit length, three ways."""

    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        a = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        b = x * torch.linalg.vector_norm(x, dim=-1, keepdim=True).reciprocal()
        c = x * (1 / torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) * x.shape[-1]))
        return self.proj(a + b + c)


class StandardiseThenRestore(nn.Module):
    """Inputs standardised per sample, the model's output given their scale back (the statistic
    multiplies another tensor: correct)."""

    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.body = nn.Linear(dim, dim)

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)
        y = self.body((x - mean) / std)
        return y * std + mean


class SquashedCapsules(nn.Module):
    """Capsule squashing: a vector's length mapped into (0, 1), the chain goes through a ratio of
    two tensors (not read)."""

    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        s = self.proj(x)
        squared = (s ** 2).sum(dim=-1, keepdim=True)
        return squared / (1 + squared) * s / torch.sqrt(squared + 1e-8)


class LearnedTemperatureScale(nn.Module):
    """Features multiplied by their RMS through a learned gate (a scale the model learns: the
    chain holds a parameter and is not read)."""

    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Parameter(torch.full((1,), 0.5))
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        rms = x.pow(2).mean(-1, keepdim=True).sqrt()
        return self.out(F.gelu(x) * (rms * self.gate) / math.sqrt(x.shape[-1]))
