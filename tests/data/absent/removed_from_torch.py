"""Code written for torch 1.x: Python 2 shims from ``torch._six`` and the linear layer
``nn.MultiheadAttention`` used to build (written for these tests)."""

from itertools import repeat

import torch.nn as nn
from torch._six import container_abcs, inf
from torch.nn.modules.linear import _LinearWithBias


def to_2tuple(x):
    if isinstance(x, container_abcs.Iterable):
        return x
    return tuple(repeat(x, 2))


class PatchEmbed(nn.Module):
    def __init__(self, img_size=32, patch_size=4, in_chans=3, embed_dim=64):
        super().__init__()
        patch = to_2tuple(patch_size)
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class OldAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.out_proj = _LinearWithBias(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.in_proj(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (C // self.num_heads) ** -0.5
        weights = scores.clamp(max=inf).softmax(dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, C))
