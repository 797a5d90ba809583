"""Sizes a module computes from its constructor's arguments: a text prefix before a grid of
image tokens, the prefix being what is left of the sequence once the grid is taken out."""

import torch
import torch.nn as nn


class PrefixThenGrid(nn.Module):
    def __init__(self, dim, seq_len, grid=8):
        super().__init__()
        self.seq_len, self.grid = seq_len, grid
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        prefix = self.seq_len - self.grid * self.grid  # the text tokens before the image's
        keep = torch.ones(x.shape[0], prefix, dtype=torch.bool)
        return self.proj(x) * keep.float().mean()


class WindowTooWide(nn.Module):
    """A pad of minus the sequence's length: the code's own bug at any sizes it is given."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        pad = torch.zeros(x.shape[0], x.shape[1] - 2 * x.shape[1], x.shape[2])
        return self.proj(torch.cat([x, pad], dim=1))
