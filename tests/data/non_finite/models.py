"""Where a NaN or an Inf is made, and why: each buggy module makes one from finite inputs at its
``# BUG`` line, of the kind its ``CAUSE`` names, read from the values (an overflowing product,
0/0, a log of 0, a softmax row with every key masked, an exp past the largest float); the
correct ones mask and divide the safe way. Class attributes as in the style corpus
(tests/style_corpus.py)."""

import math

import torch
import torch.nn as nn


class _QKV(nn.Module):
    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def parts(self, x):
        return self.qkv(x).chunk(3, dim=-1)


# --- correct ------------------------------------------------------------------------------------

class LargestNegativeMask(_QKV):
    """A row with every key masked by the dtype's lowest number: uniform weights, no NaN."""

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.parts(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        hidden = torch.ones(T, T, dtype=torch.bool).triu(1)
        hidden[0] = True
        s = s.masked_fill(hidden, torch.finfo(s.dtype).min)
        return s.softmax(dim=-1) @ v


class LogMaskEveryRowSees(_QKV):
    """log(0/1) as an additive mask: -inf where masked, each row keeps its own key."""

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.parts(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + torch.ones(T, T).tril().log()
        return s.softmax(dim=-1) @ v


class GuardedDivision(_QKV):
    """exp weights renormalised with an epsilon: a fully masked row stays 0."""

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.parts(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        keep = torch.ones(T, T).tril()
        keep[0] = 0
        e = torch.exp(s - s.amax(dim=-1, keepdim=True)) * keep
        return e / (e.sum(dim=-1, keepdim=True) + 1e-9) @ v


# --- buggy ---------------------------------------------------------------------------------------

class ScoresOverflow(_QKV):
    """Unscaled inputs of 1e19: q @ k passes float32's largest; the softmax makes NaN of it."""

    BUG = "non-finite"
    CAUSE = "overflow"

    def forward(self, x):
        q, k, v = self.parts(x * 1e19)
        s = q @ k.transpose(-2, -1)  # BUG
        return s.softmax(dim=-1) @ v


class ScoresOverflowBelow(_QKV):
    """Scores past -max in every entry, then a causal mask: all -inf rows that no mask made."""

    BUG = "non-finite"
    CAUSE = "overflow"

    def forward(self, x):
        T = x.size(1)
        v = self.parts(x)[2]
        q = x.abs() * 1e20 + 1e20
        s = q @ (-q).transpose(-2, -1)  # BUG
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v


class EveryKeyMasked(_QKV):
    BUG = "non-finite"
    CAUSE = "every key masked"

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.parts(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        hidden = torch.ones(T, T, dtype=torch.bool).triu(1)
        hidden[0] = True
        s = s.masked_fill(hidden, float("-inf"))
        return s.softmax(dim=-1) @ v  # BUG


class ZeroOverZero(GuardedDivision):
    BUG = "non-finite"
    CAUSE = "0/0"

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.parts(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        keep = torch.ones(T, T).tril()
        keep[0] = 0
        e = torch.exp(s - s.amax(dim=-1, keepdim=True)) * keep
        w = e / e.sum(dim=-1, keepdim=True)  # BUG
        return w @ v


class LogOfZero(_QKV):
    """log(0/1) as an additive mask, with one row that sees no key at all."""

    BUG = "non-finite"
    CAUSE = "log of 0"

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.parts(x)
        keep = torch.ones(T, T).tril()
        keep[0] = 0
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        s = s + keep.log()  # BUG
        return s.softmax(dim=-1) @ v


class ExpOverflow(_QKV):
    """exp of sharpened scores without subtracting the maximum."""

    BUG = "non-finite"
    CAUSE = "overflow"

    def forward(self, x):
        q, k, v = self.parts(x)
        e = torch.exp(q @ k.transpose(-2, -1) * 100.0)  # BUG
        return e / e.sum(dim=-1, keepdim=True) @ v
