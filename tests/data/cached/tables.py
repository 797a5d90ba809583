"""Modules whose constructors read tables from cached functions of their own file, and one
whose output has a second axis as long as the batch."""

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@functools.lru_cache(maxsize=8)
def log_weights(n: int) -> torch.Tensor:
    """Quadrature-like log weights over n positions, computed once per n."""
    return torch.log(torch.linspace(1.0, 2.0, n)).reshape(1, 1, n)


def copied(f):
    """A cache of its own that hands out copies (the cache is held in the closure)."""
    cached = functools.lru_cache(maxsize=4)(f)

    def wrapper(*args):
        return cached(*args).clone()

    return wrapper


@copied
def decay_table(n: int) -> torch.Tensor:
    return torch.exp(-torch.arange(n, dtype=torch.float32) / n)


class WeightedPositions(nn.Module):
    """Attention over a fixed number of positions with log weights added to the scores."""

    def __init__(self, dim, heads, positions=24):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("bias", log_weights(positions), persistent=False)
        self.register_buffer("decay", decay_table(positions), persistent=False)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias[..., :n])
        y = y * self.decay[:n, None]
        return self.proj(y.transpose(1, 2).reshape(b, n, c))


class LabelQueries(nn.Module):
    """One learned query per label attends to the real tokens of each sample: the output is
    (B, labels, C), and with as many labels as samples its two first axes are as long."""

    def __init__(self, dim, labels=5):
        super().__init__()
        self.labels = nn.Embedding(labels, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.scale = 1 / math.sqrt(dim)

    def forward(self, tokens, keep):
        queries = self.labels.weight.expand(tokens.shape[0], -1, -1)
        mask = keep.bool()[:, None, :]
        return F.scaled_dot_product_attention(queries, self.key(tokens), self.value(tokens),
                                              attn_mask=mask, scale=self.scale)
