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


class ChannelsFirstAttention(nn.Module):
    """Takes (B, C, T) and says so by unpacking it."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, C, T = x.shape
        q, k, v = self.qkv(x.transpose(1, 2)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C)).transpose(1, 2)


class PackedTokensMlp(nn.Module):
    """A flat row of tokens, as inference engines pack them: (T, C)."""

    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        n_tokens, _ = x.shape
        return self.down(torch.nn.functional.gelu(self.up(x))).view(n_tokens, -1)
