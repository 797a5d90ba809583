"""A model whose constructor builds its blocks through a helper defined inside it; the helper's
parameter shares its name with a list the constructor takes (one width per level)."""

import torch
import torch.nn as nn


class Scale(nn.Module):
    def __init__(self, c, c_cond):
        super().__init__()
        self.mapper = nn.Linear(c_cond, c)
        self.width = c

    def forward(self, x, cond):
        return x * (1 + self.mapper(cond))


class Levels(nn.Module):
    def __init__(self, c_cond=8, c_hidden=[16, 32]):
        super().__init__()

        def get_block(c_hidden):
            return Scale(c_hidden, c_cond)

        self.blocks = nn.ModuleList([get_block(c) for c in c_hidden])

    def forward(self, x, cond):
        return self.blocks[0](x, cond)


class Chunked(nn.Module):
    def __init__(self, chunks, fn):
        super().__init__()
        self.chunks = chunks
        self.fn = fn

    def forward(self, x):
        if self.chunks <= 1:
            return self.fn(x)
        return torch.cat([self.fn(c) for c in x.chunk(self.chunks, dim=1)], dim=1)


class Stack(nn.Module):
    def __init__(self, dim, ff_chunks=1):
        super().__init__()
        get_ff = lambda: Chunked(ff_chunks, nn.Linear(dim, dim))  # noqa: E731
        self.ff = get_ff()

    def forward(self, x):
        return self.ff(x)
