"""Causal masks the right way round and the wrong way round, written the ways decoders write
them: a boolean triangle for ``masked_fill`` (with and without ``~``), a comparison of positions
for ``torch.where``, an additive ``-inf`` triangle, einsum scores, sequence-first with heads in
the batch. The correct ones are quiet; each buggy twin hides each query's earlier keys and keeps
the later ones, and is found as a causal leak at the line that built the mask (``# BUG``), or at
the op that applied it when the mask was built outside the forward. A 0/1 triangle multiplied
into the scores sets the later keys' scores to 0, which the softmax still weighs: found at the
product."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def split(self, x):
        batch, length, _ = x.shape
        packed = self.qkv(x).view(batch, length, 3, self.heads, self.size)
        return packed.permute(2, 0, 3, 1, 4).unbind(0)

    def merge(self, y):
        batch, heads, length, size = y.shape
        return self.out(y.transpose(1, 2).reshape(batch, length, heads * size))


class KeepTriangle(_Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        length = x.shape[1]
        keep = torch.ones(length, length, dtype=torch.bool).tril()
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size)
        scores = scores.masked_fill(~keep, float("-inf"))
        return self.merge(scores.softmax(dim=-1) @ v)


class KeepTriangleFilled(_Heads):
    BUG = "causal-leak"

    def forward(self, x):
        q, k, v = self.split(x)
        length = x.shape[1]
        keep = torch.ones(length, length, dtype=torch.bool).tril()  # BUG
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size)
        scores = scores.masked_fill(keep, -1e9)
        return self.merge(scores.softmax(dim=-1) @ v)


class KeepTriangleMultiplied(_Heads):
    """The 0/1 triangle multiplied into the scores: a later key's score is 0, not hidden."""

    BUG = "causal-leak"

    def forward(self, x):
        q, k, v = self.split(x)
        length = x.shape[1]
        keep = torch.ones(length, length).tril()
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size) * keep  # BUG
        return self.merge(F.dropout(scores.softmax(dim=-1), 0.1, self.training) @ v)


class WherePositions(_Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        position = torch.arange(x.shape[1])
        allowed = position[None, :] <= position[:, None]
        scores = torch.einsum("bhid,bhjd->bhij", q, k) * self.size ** -0.5
        scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-1)
        return self.merge(torch.einsum("bhij,bhjd->bhid", weights, v))


class WherePositionsBackwards(_Heads):
    BUG = "causal-leak"

    def forward(self, x):
        q, k, v = self.split(x)
        position = torch.arange(x.shape[1])
        allowed = position[None, :] >= position[:, None]  # BUG
        scores = torch.einsum("bhid,bhjd->bhij", q, k) * self.size ** -0.5
        scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-1)
        return self.merge(torch.einsum("bhij,bhjd->bhid", weights, v))


class AdditiveBuffer(_Heads):
    """An additive -inf triangle made once for the longest sequence and sliced."""

    INIT = {"width": "C", "heads": "H", "block": "L"}

    def __init__(self, width, heads, block):
        super().__init__(width, heads)
        self.register_buffer("future", torch.full((block, block), float("-inf")).triu(1))

    def forward(self, x):
        q, k, v = self.split(x)
        length = x.shape[1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.size) + self.future[:length, :length]
        return self.merge(scores.softmax(dim=-1) @ v)


class AdditiveBufferTransposed(AdditiveBuffer):
    """The buffer built right, applied transposed: -inf below the diagonal."""

    BUG = "causal-leak"

    def forward(self, x):
        q, k, v = self.split(x)
        length = x.shape[1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.size) + self.future[:length, :length].t()  # BUG
        return self.merge(scores.softmax(dim=-1) @ v)


class SequenceFirstFolded(nn.Module):
    """(T, B, C), heads folded into the batch, a float mask built with masked_fill."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=T,B,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def mask(self, length):
        ones = torch.ones(length, length)
        return torch.zeros(length, length).masked_fill(torch.triu(ones, 1) == 1, float("-inf"))

    def forward(self, x):
        length, batch, width = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        fold = lambda z: z.reshape(length, batch * self.heads, self.size).transpose(0, 1)  # noqa: E731
        q, k, v = fold(q) * self.size ** -0.5, fold(k), fold(v)
        scores = torch.baddbmm(self.mask(length), q, k.transpose(1, 2))
        out = torch.bmm(scores.softmax(dim=-1), v).transpose(0, 1).reshape(length, batch, width)
        return self.out(out)
