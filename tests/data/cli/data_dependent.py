"""Modules whose forward needs real values: they cannot run on fake tensors."""

import torch
import torch.nn as nn


class ItemScale(nn.Module):
    """Reads a learned temperature with .item()."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.temperature = nn.Parameter(torch.ones(1))

    def forward(self, x):
        scale = self.temperature.item()
        return self.proj(x) * scale


class MaskSelect(nn.Module):
    """Boolean-mask indexing: the output size depends on the values."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = self.proj(x)
        return h[h > 0]


class NonZero(nn.Module):
    """torch.nonzero: how many rows it returns depends on the values."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = self.proj(x)
        return torch.nonzero(h > 0)


class BranchOnValue(nn.Module):
    """Python control flow on a tensor's value."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = self.proj(x)
        if h.sum() > 0:
            return h
        return -h


class ItemInInit(nn.Module):
    """Reads a value while building: the constructor itself needs real values."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.norm = float(self.proj.weight.detach().abs().max())

    def forward(self, x):
        return self.proj(x) / self.norm
