"""Correct code that looks like a bug to a pattern-matching rule, and buggy twins of rules other
than the attention-core ones (each marks its line with ``# BUG``)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Base(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def split(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return [t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v)]


class MaskedRowsNanToNum(_Base):
    """Fully masked query rows give NaN after softmax; nan_to_num turns them to 0 on purpose."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        valid = torch.ones(T, T, dtype=torch.bool)
        valid[0] = False
        scores = scores.masked_fill(~valid, float("-inf"))
        attn = torch.nan_to_num(scores.softmax(dim=-1), nan=0.0)
        return self.out((attn @ v).transpose(1, 2).reshape(B, T, C))


class FinfoMinMask(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        scores = torch.einsum("bhid,bhjd->bhij", q, k) * q.size(-1) ** -0.5
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)
        attn = scores.softmax(dim=-1)
        return self.out(torch.einsum("bhij,bhjd->bhid", attn, v).transpose(1, 2).reshape(B, T, C))


class LogOfClampedProbs(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 4)

    def forward(self, x):
        p = torch.sigmoid(self.proj(x)) - 0.5
        return torch.log(p.clamp(min=1e-6)) + torch.log1p(p.abs())


class DropoutTiedToTraining(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        attn = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)
        attn = F.dropout(attn, p=0.1, training=self.training)
        return self.out((attn @ v).transpose(1, 2).contiguous().view(B, T, C))


class SeededRandomInit(nn.Module):
    """torch.rand in forward, but from a generator seeded the same on every call."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        g = torch.Generator().manual_seed(1234)
        proj = torch.rand(self.dim, self.dim, generator=g) / self.dim
        return x @ proj.T


class InPlaceOnOwnTensors(nn.Module):
    """In-place ops on tensors the module made itself; the caller's x is not touched."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, max_len=64):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.pos = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, x):
        x = x + self.pos[: x.size(1)]
        h = self.fc(x)
        h.relu_()
        h += x
        h.mul_(0.5)
        return h


class WeightTransposes(nn.Module):
    """``.T`` on 2-D weights and matrices: a legal transpose."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim, dim) / math.sqrt(dim))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(B * T, C)
        y = flat @ self.w.T
        gram = self.w.T @ self.w / C
        return (y @ gram.t()).reshape(B, T, C)


# --- buggy twins ------------------------------------------------------------------------------

class InPlacePosOnCallersInput(nn.Module):
    BUG = "input-mutated"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, max_len=64):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.pos = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, x):
        x += self.pos[: x.size(1)]  # BUG
        return self.fc(x)


class DropoutAlwaysOn(_Base):
    BUG = "nondeterministic-eval"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        attn = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)
        attn = F.dropout(attn, p=0.1)  # BUG
        return self.out((attn @ v).transpose(1, 2).contiguous().view(B, T, C))


class TransposeReversedOn3D(nn.Module):
    BUG = "reversed-transpose"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim, dim) / math.sqrt(dim))

    def forward(self, x):
        y = x @ self.w.T
        gram = y @ y.mT
        return gram.T  # BUG


class ViewAfterTranspose(_Base):
    BUG = "noncontiguous-view"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        attn = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)
        return self.out((attn @ v).transpose(1, 2).view(B, T, C))  # BUG


class MaskedRowsLeftNaN(_Base):
    BUG = "non-finite"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        valid = torch.ones(T, T, dtype=torch.bool)
        valid[0] = False
        scores = scores.masked_fill(~valid, float("-inf"))
        attn = scores.softmax(dim=-1)  # BUG
        return self.out((attn @ v).transpose(1, 2).reshape(B, T, C))


class MeanOverBatchNorm(nn.Module):
    BUG = "batch-leak"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        mu = h.mean(dim=(0, 1), keepdim=True)  # BUG
        return h - mu


class PositionsIndexedByBatch(nn.Module):
    BUG = "position-axis"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, max_len=64):
        super().__init__()
        self.pe = nn.Parameter(torch.randn(max_len, 1, dim))
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        x = x + self.pe[: x.size(0)]  # BUG
        return self.fc(x)


class GatesOuterProductByAccident(nn.Module):
    BUG = "silent-broadcast"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Linear(dim, 1)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        g = torch.sigmoid(self.gate(x)).squeeze(-1)
        pooled = self.fc(x).mean(dim=1)
        score = g.mean(dim=1, keepdim=True) - pooled.mean(dim=-1)  # BUG
        return score


class MaskFillNotAssigned(_Base):
    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        pad = torch.zeros(B, 1, 1, T, dtype=torch.bool)
        pad[..., -1] = True
        scores.masked_fill(pad, float("-inf"))  # BUG
        attn = scores.softmax(-1)
        return self.out((attn @ v).transpose(1, 2).reshape(B, T, C))
