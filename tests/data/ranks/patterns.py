"""Modules that take heads already split, and say so in an einops pattern of their forward."""

import torch
from einops import rearrange
from torch import nn


class HeadMerge(nn.Module):
    """Merges per-head outputs (b, h, n, d) back into the model width."""

    def __init__(self, dim):
        super().__init__()
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        y = rearrange(x, "b h n d -> b n (h d)")
        return self.out(y)


class HeadMergeBatchSoftmax(HeadMerge):
    """The bug: the gate is normalised over the batch, which mixes the samples."""

    def forward(self, x):
        y = rearrange(x, "b h n d -> b n (h d)")
        gate = torch.softmax(y, dim=0)
        return self.out(y * gate)


class GroupedPattern(HeadMerge):
    """A pattern whose axes are not words for sizes: no reading, a target error."""

    def forward(self, x):
        y = rearrange(x, "b g1 g2 n -> b n (g1 g2)")
        return self.out(y)
