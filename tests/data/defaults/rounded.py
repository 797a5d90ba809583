"""Modules whose widths are rounded to suit their default head counts."""

from dataclasses import dataclass, field

import torch
import torch.nn as nn


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


@dataclass
class MixerConfig:
    embedding_dim: int = -1
    num_heads: int = 4
    expand: float = 2.0
    inner_dim: int = field(default=0)

    def __post_init__(self):
        self.inner_dim = _round_up(int(self.expand * self.embedding_dim), 64)


class HeadwiseMixer(nn.Module):
    """An inner width rounded up to a multiple of 64, split into the config's heads."""

    def __init__(self, config: MixerConfig):
        super().__init__()
        self.config = config
        self.up = nn.Linear(config.embedding_dim, config.inner_dim)
        self.down = nn.Linear(config.inner_dim, config.embedding_dim)

    def forward(self, x):
        B, T, _ = x.shape
        h = self.up(x).view(B, T, self.config.num_heads, -1)
        h = h - h.mean(dim=-1, keepdim=True)
        return self.down(h.reshape(B, T, -1))


class RoundedHeads(nn.Module):
    """The same with plain arguments: the inner width is a multiple of 32."""

    def __init__(self, d_model: int, n_heads: int = 8):
        super().__init__()
        self.n_heads = n_heads
        inner = _round_up(2 * d_model, 32)
        self.up = nn.Linear(d_model, inner)
        self.down = nn.Linear(inner, d_model)

    def forward(self, x):
        B, T, _ = x.shape
        h = self.up(x).reshape(B, T, self.n_heads, -1).softmax(dim=-1)
        return self.down(h.reshape(B, T, -1))


class FixedHeadSize(nn.Module):
    """A head size written as a number: wrong at any width but 8 * 64, whatever the heads."""

    def __init__(self, d_model: int, n_heads: int = 8):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.n_heads, 64).transpose(1, 2)
        k = k.view(B, T, self.n_heads, 64).transpose(1, 2)
        v = v.view(B, T, self.n_heads, 64).transpose(1, 2)
        w = (q @ k.transpose(-2, -1) / 8).softmax(dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(B, T, C))
