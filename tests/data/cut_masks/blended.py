"""A causal triangle kept as a 0/1 buffer for the longest sequence and blended into the scores
(``scores * tri + -1e9 * (1 - tri)``): cut to the scores' size with a slice it hides each
query's later keys; cut with an index (``tri[:, :, T, T]``) it is one entry, the same for every
query and key, and hides none."""

import math

import torch
import torch.nn as nn


class BlendedTriangle(nn.Module):
    def __init__(self, width, heads, longest=32):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.register_buffer("tri", torch.tril(torch.ones(longest, longest)).view(1, 1, longest, longest))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        w = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        tri = self.tri[:, :, :T, :T]
        w = w * tri + -1e9 * (1 - tri)
        y = w.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class BlendedTriangleCut(BlendedTriangle):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        w = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        tri = self.tri[:, :, w.size(-2), w.size(-1)]  # BUG
        w = w * tri + -1e9 * (1 - tri)
        y = w.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))
