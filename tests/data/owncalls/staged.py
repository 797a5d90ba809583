"""A pyramid of attention stages: one width and one head count per stage, a norm module handed
in. Nothing in the constructor's names says what the tuples hold; the main block builds it."""

import math

import torch
from torch import nn


class StageAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        mixed = scores.softmax(dim=-1) @ v
        return self.out(mixed.transpose(1, 2).reshape(b, n, c))


class Pyramid(nn.Module):
    def __init__(self, widths: tuple, heads: list, norm: nn.Module):
        super().__init__()
        self.norm = norm
        self.stages = nn.ModuleList(StageAttention(w, h) for w, h in zip(widths, heads))
        self.steps = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))

    def forward(self, x):
        x = self.norm(x)
        for i, stage in enumerate(self.stages):
            x = x + stage(x)
            if i < len(self.steps):
                x = self.steps[i](x)
        return x


if __name__ == "__main__":
    model = Pyramid((24, 40), [2, 4], nn.LayerNorm(24))
    tokens = torch.randn(3, 10, 24)
    print(model(tokens).shape)
