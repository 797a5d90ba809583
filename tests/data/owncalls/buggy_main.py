"""An attention built from a (width, heads) pair: its softmax normalises over the queries'
axis, a bug its own call shows."""

import torch
from torch import nn


class PairAttention(nn.Module):
    def __init__(self, shape: tuple):
        super().__init__()
        self.width, self.heads = shape
        self.qkv = nn.Linear(self.width, 3 * self.width)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        weights = scores.softmax(dim=-2)
        return (weights @ v).transpose(1, 2).reshape(b, n, c)


if __name__ == "__main__":
    layer = PairAttention((20, 4))
    print(layer(torch.randn(3, 6, 20)).shape)
