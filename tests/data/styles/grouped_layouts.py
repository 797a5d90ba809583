"""head-grouping, in layouts the first corpus (grouped.py) does not write: keys kept time-major
(B, T, Hkv, d) as flash-attn and Mistral's reference code keep them, the copies made on the flat
(B, T, Hkv*d) projection before the heads are split, ``torch.stack`` of copies, ``torch.tile``,
the query groups folded into the time axis (flash-decoding), multi-query keys expanded; and
buggy twins that tile the key/value heads (kv0, kv1, kv0, kv1, ...), each marked ``# BUG``.

6 query heads share 2 key/value heads in groups of 3 (``DIMS``: the default H=11 is prime)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

GQA = {"H": 6}


class _TimeMajor(nn.Module):
    """Projections viewed as (B, T, heads, d) and left time-major until the product."""

    INIT = {"dim": "C", "n_heads": "H", "n_kv_heads": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = GQA

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.n_rep = n_heads // n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def project(self, x):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k, v = self.wkv(x).view(B, T, 2, self.n_kv_heads, self.head_dim).unbind(2)
        return q, k, v  # (B, T, H, d), (B, T, Hkv, d), (B, T, Hkv, d)

    def attend(self, q, k, v):
        """All three (B, T, H, d)."""
        B, T, H, d = q.shape
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        y = scores.softmax(-1) @ v
        return self.wo(y.transpose(1, 2).reshape(B, T, H * d))


# --- correct ----------------------------------------------------------------------------------------

class TimeMajorRepeatInterleave(_TimeMajor):
    """flash-attn's layout: ``repeat_interleave`` on dim=2 of (B, T, Hkv, d)."""

    def forward(self, x):
        q, k, v = self.project(x)
        k = k.repeat_interleave(self.n_rep, dim=2)
        v = v.repeat_interleave(self.n_rep, dim=2)
        return self.attend(q, k, v)


class TimeMajorExpand(_TimeMajor):
    """Mistral's reference ``repeat_kv``: ``x[:, :, :, None, :].expand(...).reshape(...)``."""

    def forward(self, x):
        q, k, v = self.project(x)
        B, T, Hkv, d = k.shape

        def rep(t):
            return t[:, :, :, None, :].expand(B, T, Hkv, self.n_rep, d).reshape(B, T, Hkv * self.n_rep, d)

        return self.attend(q, rep(k), rep(v))


class StackedCopiesInnermost(_TimeMajor):
    """``torch.stack([k] * G, dim=3)`` then a flatten: each key/value head's copies together."""

    def forward(self, x):
        q, k, v = self.project(x)
        k = torch.stack([k] * self.n_rep, dim=3).flatten(2, 3)
        v = torch.stack([v] * self.n_rep, dim=3).flatten(2, 3)
        return self.attend(q, k, v)


class FlatProjectionExpanded(nn.Module):
    """The copies made on the flat (B, T, Hkv*d) projection, then split into H heads."""

    INIT = {"dim": "C", "n_heads": "H", "n_kv_heads": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = GQA

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.h, self.hkv, self.d = n_heads, n_kv_heads, dim // n_heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, n_kv_heads * self.d, bias=False)
        self.v = nn.Linear(dim, n_kv_heads * self.d, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)

    def widen(self, t):
        B, T, _ = t.shape
        g = self.h // self.hkv
        return t.view(B, T, self.hkv, 1, self.d).expand(B, T, self.hkv, g, self.d).reshape(B, T, self.h * self.d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.q(x), self.widen(self.k(x)), self.widen(self.v(x))
        q, k, v = (t.view(B, T, self.h, self.d).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(B, T, C))


class GroupsFoldedIntoTime(_TimeMajor):
    """Flash-decoding's trick: the G query heads of a group ride along the time axis, so one
    key/value head serves (G*T) query rows; nothing is copied."""

    def forward(self, x):
        q, k, v = self.project(x)
        B, T, H, d = q.shape
        q = q.transpose(1, 2).reshape(B, self.n_kv_heads, self.n_rep * T, d)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        att = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(-1)
        y = (att @ v).view(B, H, T, d)
        return self.wo(y.transpose(1, 2).reshape(B, T, H * d))


class MultiQueryExpand(nn.Module):
    """One key/value head expanded to H: both orders are the same."""

    INIT = {"dim": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = GQA

    def __init__(self, dim, n_heads):
        super().__init__()
        self.h, self.d = n_heads, dim // n_heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * self.d, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, self.d).transpose(1, 2)
        k, v = self.kv(x).unsqueeze(1).chunk(2, dim=-1)  # (B, 1, T, d)
        k, v = k.expand(B, self.h, T, self.d), v.expand(B, self.h, T, self.d)
        y = F.softmax(q @ k.mT / math.sqrt(self.d), dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, C))


# --- buggy ------------------------------------------------------------------------------------------

class TimeMajorTiledRepeat(_TimeMajor):
    """``repeat(1, 1, G, 1)`` on (B, T, Hkv, d): tiles the heads."""

    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.project(x)
        k = k.repeat(1, 1, self.n_rep, 1)  # BUG
        v = v.repeat_interleave(self.n_rep, dim=2)
        return self.attend(q, k, v)


class StackedCopiesOutermost(_TimeMajor):
    """``torch.stack([k] * G, dim=2)``: the copy index lands major to the key/value head."""

    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.project(x)
        k = torch.stack([k] * self.n_rep, dim=3).flatten(2, 3)
        v = torch.stack([v] * self.n_rep, dim=2).flatten(2, 3)  # BUG
        return self.attend(q, k, v)


class TorchTile(_TimeMajor):
    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.project(x)
        k = torch.tile(k, (1, 1, self.n_rep, 1))  # BUG
        v = v.repeat_interleave(self.n_rep, dim=2)
        return self.attend(q, k, v)


class FlatProjectionTiled(FlatProjectionExpanded):
    """The flat projection repeated whole: (kv0, kv1) (kv0, kv1) (kv0, kv1) along the width."""

    BUG = "head-grouping"

    def widen(self, t):
        return t.repeat(1, 1, self.h // self.hkv)  # BUG
