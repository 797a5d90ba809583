"""A block built around a module it is handed: its script builds and calls it."""

import torch
from torch import nn


class Wrapped(nn.Module):
    def __init__(self, inner: nn.Module, width):
        super().__init__()
        self.inner = inner
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return x + self.inner(self.norm(x))
