"""Sizes the module reads from module globals that only the main block sets, and a settings
dataclass handed to the constructor: nothing can build these but the file's own main block."""

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Settings:
    width: int
    heads: int
    dropout: float = 0.0


class SettingsAttention(nn.Module):
    def __init__(self, settings: Settings):
        super().__init__()
        self.heads = settings.heads
        self.qkv = nn.Linear(settings.width, 3 * settings.width)
        self.drop = nn.Dropout(settings.dropout)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        return (self.drop(weights) @ v).transpose(1, 2).reshape(b, n, c)


class GlobalMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(WIDTH, WIDTH)  # noqa: F821 - set by the main block

    def forward(self, x):
        return x + self.mix(torch.relu(x))


if __name__ == "__main__":
    WIDTH = 30
    settings = Settings(width=WIDTH, heads=3)
    tokens = torch.randn(2, 9, WIDTH)
    print(GlobalMixer()(SettingsAttention(settings)(tokens)).shape)
