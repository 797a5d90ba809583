"""Attention whose weights are a mixture of attention maps on purpose: differential attention
(one softmax less a learned multiple of another, so that the common noise cancels), heads mixed
after the softmax by a learned matrix (talking heads), two maps averaged. Each mixes weights
with weights: their sums are the model's choice, not a bug, and the correct ones are quiet.
The buggy twins are the differential attention scaled by the width, and one whose weights are shifted by a
constant after the softmax."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Differential(nn.Module):
    """Two queries and two keys per head; the second map, times a learned lambda, is taken
    from the first."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads // 2
        self.q = nn.Linear(width, width, bias=False)
        self.k = nn.Linear(width, width, bias=False)
        self.v = nn.Linear(width, width, bias=False)
        self.out = nn.Linear(width, width, bias=False)
        self.lam = nn.Parameter(torch.full((heads, 1, 1), 0.3))
        self.norm = nn.LayerNorm(2 * self.size)

    def scores(self, q, k):
        return q @ k.transpose(-1, -2) / math.sqrt(self.size)

    def forward(self, x):
        batch, length, width = x.shape
        q = self.q(x).view(batch, length, self.heads, 2, self.size).permute(3, 0, 2, 1, 4)
        k = self.k(x).view(batch, length, self.heads, 2, self.size).permute(3, 0, 2, 1, 4)
        v = self.v(x).view(batch, length, self.heads, 2 * self.size).transpose(1, 2)
        first = self.scores(q[0], k[0]).softmax(dim=-1)
        second = self.scores(q[1], k[1]).softmax(dim=-1)
        weights = first - self.lam * second
        y = self.norm(weights @ v)
        return self.out(y.transpose(1, 2).reshape(batch, length, width))


class DifferentialByWidth(Differential):
    BUG = "attention-scale"

    def scores(self, q, k):
        return q @ k.transpose(-1, -2) / math.sqrt(self.q.in_features)  # BUG


class DifferentialFused(nn.Module):
    """The two maps from one softmax over scores stacked on a new axis, then subtracted."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads // 2
        self.qk = nn.Linear(width, 2 * width, bias=False)
        self.v = nn.Linear(width, width, bias=False)
        self.lam = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        batch, length, width = x.shape
        q, k = self.qk(x).view(batch, length, 2, self.heads, 2, self.size).unbind(2)
        q, k = q.permute(0, 2, 3, 1, 4), k.permute(0, 2, 3, 1, 4)  # (B, H, 2, T, d)
        att = F.softmax(torch.einsum("bhpid,bhpjd->bhpij", q, k) * self.size ** -0.5, dim=-1)
        att = att[:, :, 0] - self.lam * att[:, :, 1]
        v = self.v(x).view(batch, length, self.heads, 2 * self.size).transpose(1, 2)
        return (att @ v).transpose(1, 2).reshape(batch, length, width)


class _Heads(nn.Module):
    """Fused projections split into heads; ``attend`` contracts weights with the values."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width)

    def split(self, x):
        batch, length, _ = x.shape
        return (t.view(batch, length, self.heads, self.size).transpose(1, 2)
                for t in self.qkv(x).chunk(3, dim=-1))

    def attend(self, att, v):
        batch, _, length, _ = v.shape
        return (att @ v).transpose(1, 2).reshape(batch, length, self.heads * self.size)


class TalkingHeads(_Heads):
    """Each head's weights a learned mixture of every head's, after the softmax."""

    def __init__(self, width, heads):
        super().__init__(width, heads)
        self.mix = nn.Parameter(torch.eye(heads) + 0.1 * torch.randn(heads, heads))

    def forward(self, x):
        q, k, v = self.split(x)
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.size)).softmax(dim=-1)
        att = torch.einsum("bhij,hg->bgij", att, self.mix)
        return self.attend(att, v)


class TwoMapsAveraged(_Heads):
    """Content and position maps, each a softmax, averaged."""

    INIT = {"width": "C", "heads": "H", "length": "T"}

    def __init__(self, width, heads, length):
        super().__init__(width, heads)
        self.positions = nn.Parameter(torch.randn(heads, length, length))

    def forward(self, x):
        q, k, v = self.split(x)
        length = x.shape[1]
        content = (q @ k.transpose(-2, -1) * self.size ** -0.5).softmax(dim=-1)
        position = self.positions[:, :length, :length].softmax(dim=-1)
        att = (content + position) / 2
        return self.attend(att, v)


class ShiftedWeights(_Heads):
    """Weights lowered by a constant after the softmax: no longer a distribution over the keys."""

    BUG = "unnormalized-attention"

    def forward(self, x):
        q, k, v = self.split(x)
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.size)).softmax(dim=-1)
        att = att - 0.5 / x.shape[1]  # BUG
        return self.attend(att, v)
