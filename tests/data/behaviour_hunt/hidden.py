"""Leaks that autograd cannot see: the mixing happens under ``torch.no_grad()`` or behind
``.detach()``, so differentiating misses them; changing the last sample and the last position
finds them (no single op can always be named). Each has ``BUG``."""

import math

import torch
import torch.nn as nn

from buggy import _Causal, causal_attention  # noqa: F401

class CausalBatchMeanNoGrad(_Causal):
    """The batch mean taken under no_grad: autograd cannot see the samples mix."""

    BUG = "batch-leak"

    def forward(self, x):
        with torch.no_grad():
            centre = x.mean(dim=0, keepdim=True)
        x = x - centre  # BUG
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalDetachedGlobalScale(_Causal):
    """A stop-gradient normaliser over the whole sequence: position t sees the future."""

    BUG = "causal-leak"

    def forward(self, x):
        scale = x.pow(2).mean(dim=1, keepdim=True).add(1e-5).rsqrt().detach()
        x = x * scale  # BUG
        return self.proj(causal_attention(x, self.qkv, self.heads))


class NoGradFutureMax(nn.Module):
    """The normaliser is the sequence's max, taken under no_grad."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "causal-leak"
    causal = True

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        with torch.no_grad():
            peak = x.abs().amax(dim=1, keepdim=True)
        return self.lin(x / peak)  # BUG

