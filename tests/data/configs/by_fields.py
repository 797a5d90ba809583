"""A model's settings in a dataclass whose name does not say config (``ModelArgs``), some
derived in the class body, beside another dataclass the model's code never reads: the one
holding every field the attention reads is its config."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    n_embed: int = 384
    n_heads: int = 6
    head_dim: int = 64
    base_scale: float = 1.0 / math.sqrt(384)
    patch: int = 4
    side: int = 16
    n_patch = (side // patch) ** 2  # set in the class body, read as a field


@dataclass
class TrainingArgs:
    lr: float = 3e-4
    steps: int = 1000


class ScaledAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads, self.size = config.n_heads, config.head_dim
        self.qkv = nn.Linear(config.n_embed, 3 * config.n_embed)
        self.gain = nn.Parameter(config.base_scale * torch.ones(config.n_embed))
        self.positions = nn.Parameter(torch.zeros(config.n_patch, config.n_embed))

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, self.size).transpose(1, 2)
                   for t in (self.qkv(x) * torch.cat([self.gain] * 3)).chunk(3, dim=-1))
        y = (q @ k.transpose(-2, -1) / math.sqrt(self.size)).softmax(dim=-1) @ v
        return y.transpose(1, 2).reshape(batch, length, width) + self.positions.mean(0)
