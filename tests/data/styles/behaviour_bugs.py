"""Buggy twins: each class has ``BUG`` (the rule) and marks its line with ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class CausalBatchStatsInEval(_Causal):
    """A hand-written batch norm that uses the batch's statistics in eval too."""

    BUG = "batch-leak"

    def forward(self, x):
        x = (x - x.mean(dim=(0, 1), keepdim=True)) / x.std(dim=(0, 1), keepdim=True)  # BUG
        return self.proj(causal_attention(x, self.qkv, self.heads))




class CausalGlobalMean(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "causal-leak"
    causal = True

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)  # BUG
        return self.lin(x - mean)


class CausalConvCentred(_Causal):
    BUG = "causal-leak"

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.conv = nn.Conv1d(dim, dim, 3)

    def forward(self, x):
        h = self.conv(F.pad(x.transpose(1, 2), (1, 1))).transpose(1, 2)  # BUG
        return self.proj(causal_attention(h, self.qkv, self.heads))


class CausalNoiseAlways(_Causal):
    BUG = "nondeterministic-eval"
    VARIANT = "noise"  # Gaussian noise per sample: a warning, it may be meant

    def forward(self, x):
        x = x + 0.1 * torch.randn_like(x)  # BUG
        return self.proj(causal_attention(x, self.qkv, self.heads))


class ClsIntoCallersTensor(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "input-mutated"

    def __init__(self, dim):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(dim))
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        x[:, 0] = self.cls  # BUG
        return self.lin(x)


class ReluInPlaceOnInput(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "input-mutated"

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = F.relu(x, inplace=True)  # BUG
        return self.lin(h)


class InPlaceOnDetachedInput(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "input-mutated"

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = x.detach()
        h.mul_(2.0)  # BUG
        return self.lin(h)



class ClassifierLeakBeforePooling(nn.Module):
    """Meant causal (a triangular mask), but the mask is never applied; then mean pooled."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "causal-leak"

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C)
        scores.masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))  # BUG
        return self.head((scores.softmax(-1) @ v).mean(dim=1))


class UnsqueezeCallersTensor(nn.Module):
    """``unsqueeze_`` on the caller's tensor: no value changes, but the caller's x now has
    another shape, and a second call on it gives an output of another shape."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    BUG = "input-mutated"

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        x.unsqueeze_(1)  # BUG
        return self.lin(x.squeeze(1))
