"""Leaks that autograd cannot see: the mixing happens under ``torch.no_grad()`` or behind
``.detach()``, so differentiating misses them; changing the last sample and the last position
finds them (no single op can always be named: ``FOUND_AT = None``). Each has ``BUG`` and marks
the line of the leak with ``# BUG``."""

import math

import torch
import torch.nn as nn


def causal_attention(x, qkv, heads):
    B, T, C = x.shape
    q, k, v = qkv(x).chunk(3, dim=-1)
    q, k, v = [t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v)]
    scores = q @ k.transpose(-2, -1) / math.sqrt(C // heads)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class _Causal(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)


class CausalBatchMeanNoGrad(_Causal):
    """The batch mean taken under no_grad: autograd cannot see the samples mix."""

    BUG = "batch-leak"
    FOUND_AT = None

    def forward(self, x):
        with torch.no_grad():
            centre = x.mean(dim=0, keepdim=True)
        x = x - centre  # BUG
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalDetachedGlobalScale(_Causal):
    """A stop-gradient normaliser over the whole sequence: position t sees the future."""

    BUG = "causal-leak"
    FOUND_AT = None

    def forward(self, x):
        scale = x.pow(2).mean(dim=1, keepdim=True).add(1e-5).rsqrt().detach()
        x = x * scale  # BUG
        return self.proj(causal_attention(x, self.qkv, self.heads))


class NoGradFutureMax(nn.Module):
    """The normaliser is the sequence's max, taken under no_grad."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "causal-leak"
    FOUND_AT = None
    causal = True

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        with torch.no_grad():
            peak = x.abs().amax(dim=1, keepdim=True)
        return self.lin(x / peak)  # BUG

