"""Idioms that read like bugs and are right, each next to the bug it resembles.

The relative shift (pad one column of zeros, read the (T, T+1) grid as (T+1, T), drop a row,
read it back: Transformer-XL, Music Transformer, Conformer) moves row i of a relative-position
score grid i places along the keys: a deliberate reshape, in every spelling. A similarity matrix
computed keys first and normalised over the keys is right once it is transposed back. Class
attributes as in the style corpus (tests/style_corpus.py)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def shift_by_pad(rel):
    B, H, T, _ = rel.shape
    rel = F.pad(rel, (1, 0)).view(B, H, T + 1, T)
    return rel[:, :, 1:].view(B, H, T, T)


def shift_by_cat(rel):
    B, H, T, K = rel.shape
    padded = torch.cat([rel.new_zeros(B, H, T, 1), rel], dim=-1).view(B, H, K + 1, T)
    return padded[:, :, 1:].view_as(rel)


def skew_and_drop(rel):
    B, H, T, _ = rel.shape
    padded = F.pad(rel, (1, 0, 0, 0)).reshape(B, H, T + 1, T)
    return padded[:, :, 1:, :]


def skew_merged(rel):
    """The skew over every grid at once: batch and heads merged into one leading axis."""
    padded = F.pad(rel, [1, 0]).reshape(-1, rel.shape[-1] + 1, rel.shape[-2])
    return padded[:, 1:].reshape(*rel.shape)


def shift_wide(x):
    """Scores against 2T-1 relative distances, cut back to the T keys each query sees."""
    pad = torch.zeros((*x.size()[:3], 1), dtype=x.dtype)
    padded = torch.cat([pad, x], dim=-1).view(*x.size()[:2], x.size(3) + 1, x.size(2))
    return padded[:, :, 1:].view_as(x)[:, :, :, : x.size(-1) // 2 + 1]


class _RelativeHeads(nn.Module):
    SHIFT = staticmethod(shift_by_pad)

    def __init__(self, d_model, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.rel = nn.Parameter(torch.randn(block_size, d_model // n_head))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in self.qkv(x).split(C, -1))
        rel = type(self).SHIFT(q @ self.rel[-T:].transpose(0, 1))
        scores = (q @ k.transpose(-2, -1) + rel) / math.sqrt(k.size(-1))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


class ShiftByPad(_RelativeHeads):
    INIT = {"d_model": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["x=B,T,C"]


class ShiftByCat(ShiftByPad):
    SHIFT = staticmethod(shift_by_cat)


class SkewAndDrop(ShiftByPad):
    SHIFT = staticmethod(skew_and_drop)


class SkewMerged(ShiftByPad):
    SHIFT = staticmethod(skew_merged)


class SkewMergedCross(nn.Module):
    """Queries against a longer memory: one relative embedding per key, skewed with the batch
    and heads merged (queries no more than keys, as the shift needs)."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C", "memory=B,S,C"]

    def __init__(self, d_model, n_head, max_keys=64):
        super().__init__()
        self.n_head = n_head
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.rel = nn.Parameter(torch.randn(max_keys, d_model // n_head))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, memory):
        B, T, C = x.shape
        S = memory.shape[1]
        q = self.q(x).view(B, T, self.n_head, -1).transpose(1, 2)
        k, v = (t.view(B, S, self.n_head, -1).transpose(1, 2) for t in self.kv(memory).split(C, -1))
        rel = skew_merged(q @ self.rel[-S:].transpose(0, 1))
        scores = (q @ k.transpose(-2, -1) + rel) / math.sqrt(k.size(-1))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


class ShiftWide(nn.Module):
    """Conformer style: 2T-1 relative positions (13 at the probe sizes, the head size's number)."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C", "pos_emb=1,13,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.pos = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, pos_emb):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in self.qkv(x).split(C, -1))
        p = self.pos(pos_emb).view(1, -1, self.n_head, C // self.n_head).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1) + shift_wide(q @ p.transpose(-2, -1))) / math.sqrt(C // self.n_head)
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


class ShiftTimeFirst(nn.Module):
    """Transformer-XL's layout: scores (Tq, Tk, B, H), shifted along the first two axes."""

    INIT = {"d_model": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["x=T,B,C"]

    def __init__(self, d_model, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.r = nn.Parameter(torch.randn(block_size, n_head, d_model // n_head))
        self.out = nn.Linear(d_model, d_model)

    @staticmethod
    def shift(x):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), dtype=x.dtype)
        padded = torch.cat([zero_pad, x], dim=1).view(x.size(1) + 1, x.size(0), *x.size()[2:])
        return padded[1:].view_as(x)

    def forward(self, x):
        T, B, C = x.shape
        q, k, v = (t.view(T, B, self.n_head, -1) for t in self.qkv(x).split(C, -1))
        ac = torch.einsum("ibnd,jbnd->ijbn", q, k)
        bd = self.shift(torch.einsum("ibnd,jnd->ijbn", q, self.r[-T:]))
        w = ((ac + bd) / math.sqrt(C // self.n_head)).softmax(dim=1)
        return self.out(torch.einsum("ijbn,jbnd->ibnd", w, v).reshape(T, B, C))


class KeysFirstTransposed(nn.Module):
    """Similarities (B, Tk, Tq), normalised over the keys (dim=1), transposed before use."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        sim = k @ q.transpose(-2, -1) / math.sqrt(q.size(-1))
        w = sim.softmax(dim=1).transpose(1, 2)
        return w @ v


class KeysFirstEinsum(KeysFirstTransposed):
    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        sim = torch.einsum("bjd,bid->bji", k, q) / math.sqrt(q.size(-1))
        w = sim.softmax(dim=-2).permute(0, 2, 1)
        return torch.einsum("bij,bjd->bid", w, v)


class WeightsTransposedValuesFirst(KeysFirstTransposed):
    """Normalised over the keys, transposed to (B, Tk, Tq), and contracted as v^T @ w^T."""

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(dim=-1).transpose(1, 2)
        return (v.transpose(1, 2) @ w).transpose(1, 2)


class CrossKeysFirst(KeysFirstTransposed):
    INPUTS = ["x=B,T,C", "memory=B,S,C"]

    def forward(self, x, memory):
        q, k, v = self.q(x), self.k(memory), self.v(memory)
        sim = k @ q.transpose(-2, -1) / math.sqrt(q.size(-1))          # (B, S, T)
        return F.softmax(sim, dim=1).transpose(1, 2) @ v


# --- the bugs they resemble ----------------------------------------------------------------------

def shift_without_pad(x):
    return x.view(*x.size()[:2], x.size(3), x.size(2))[:, :, : x.size(2)]


class ShiftWithoutPad(ShiftWide):
    """The (T, 2T-1) grid read as (2T-1, T) without the column of zeros: no shift at all."""

    BUG = "reshape-jumble"
    FOUND_AT = "return x.view(*x.size()[:2], x.size(3), x.size(2))[:, :, : x.size(2)]"

    def forward(self, x, pos_emb):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in self.qkv(x).split(C, -1))
        p = self.pos(pos_emb).view(1, -1, self.n_head, C // self.n_head).transpose(1, 2)
        rel = shift_without_pad(q @ p.transpose(-2, -1))  # BUG
        scores = (q @ k.transpose(-2, -1) + rel) / math.sqrt(C // self.n_head)
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


class KeysFirstOverQueries(KeysFirstTransposed):
    """Keys first, but normalised over the queries (dim=-1) before the transpose."""

    BUG = "softmax-axis"
    FOUND_AT = "return w @ v"  # the product that contracts the other axis with the values

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        sim = k @ q.transpose(-2, -1) / math.sqrt(q.size(-1))
        w = sim.softmax(dim=-1).transpose(1, 2)  # BUG
        return w @ v
