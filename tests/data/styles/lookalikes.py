"""Correct attention that looks like a bug to a rule matching patterns: bidirectional masks made
by comparing positions, scores stored keys-first, scales split or learned, softmax written by
hand or online, weights masked after the softmax and renormalised. Every module here must check
clean (no error, no warning). See textbook.py for INIT / INPUTS / DIMS."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _QKV(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def split(self, x):
        B, T, C = x.shape
        return self.qkv(x).view(B, T, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)

    def merge(self, y):
        B, H, T, d = y.shape
        return self.out(y.transpose(1, 2).reshape(B, T, H * d))


# --- bidirectional masks built by comparing positions ---------------------------------------------------

class BidirectionalLocalWindow(_QKV):
    """Each token sees its neighbours within 2 on both sides: ``(i - j).abs() <= w``."""

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        pos = torch.arange(T)
        near = (pos[:, None] - pos[None, :]).abs() <= 2
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        scores = scores.masked_fill(~near, float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class ExcludeSelf(_QKV):
    """Set-style attention to every other element, never to itself: ``i == j`` is masked."""

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        idx = torch.arange(T)
        itself = idx[:, None] == idx[None, :]
        scores = (q @ k.transpose(-2, -1)) * self.hd ** -0.5
        scores = scores.masked_fill(itself, -1e4)
        return self.merge(F.softmax(scores, dim=-1) @ v)


class PairPaddingMask(_QKV):
    """A (B, T, T) mask from lengths: query and key must both be real tokens."""

    INPUTS = ["x=B,T,C", "lengths=B:long:T"]

    def forward(self, x, lengths):
        q, k, v = self.split(x)
        T = x.shape[1]
        real = torch.arange(T)[None, :] <= lengths[:, None]              # (B, T)
        pair = real[:, :, None] & real[:, None, :]                         # (B, T, T)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        scores = scores.masked_fill(~pair[:, None], torch.finfo(scores.dtype).min)
        return self.merge(scores.softmax(-1) @ v)


class PrefixLM(_QKV):
    """A prefix-LM mask: the first 3 tokens see each other, the rest are causal. The model is
    not causal, so its class says so (``causal = False``)."""

    causal = False

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        mask[:3, :3] = True
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        scores = scores.masked_fill(~mask, float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class BlockDiagonalSegments(_QKV):
    """Packed sequences: tokens attend within their own segment (segment ids compared)."""

    INPUTS = ["x=B,T,C", "segments=B,T:long:3"]

    def forward(self, x, segments):
        q, k, v = self.split(x)
        same = segments[:, :, None] == segments[:, None, :]                # (B, T, T)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        scores = scores.masked_fill(~same[:, None], float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


# --- scores stored keys first: softmax over dim 1, contracted over dim 1 ----------------------------

class KeysFirstScores(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "context=B,S,C"]

    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x, context):
        q = self.q(x)
        k, v = self.kv(context).chunk(2, dim=-1)
        scores = torch.einsum("bjd,bid->bji", k, q) / math.sqrt(q.shape[-1])   # (B, S, T)
        attn = scores.softmax(dim=1)                                          # over the keys
        return torch.einsum("bji,bjd->bid", attn, v)


# --- scales written other ways ------------------------------------------------------------------------

class SplitScaleQK(_QKV):
    """The scale split over q and k, d**-0.25 each (for float16 range)."""

    def forward(self, x):
        q, k, v = self.split(x)
        s = self.hd ** -0.25
        scores = (q * s) @ (k * s).transpose(-2, -1)
        return self.merge(scores.softmax(-1) @ v)


class SDPAExplicitScale(_QKV):
    def forward(self, x):
        q, k, v = self.split(x)
        return self.merge(F.scaled_dot_product_attention(q, k, v, scale=1.0 / math.sqrt(self.hd)))


class CosineAttentionLearnedTemperature(_QKV):
    """Swin v2: cosine similarity times a learned, clamped temperature per head."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(heads, 1, 1)))

    def forward(self, x):
        q, k, v = self.split(x)
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        scale = torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
        attn = (attn * scale).softmax(dim=-1)
        return self.merge(attn @ v)


class ValueWidthDiffers(nn.Module):
    """Keys of width d_k = 13, values of width d_v = 17 (S): scaled by sqrt(d_k)."""

    INIT = {"dim": "C", "d_k": "d", "d_v": "S"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, d_k, d_v):
        super().__init__()
        self.d_k = d_k
        self.q = nn.Linear(dim, d_k, bias=False)
        self.k = nn.Linear(dim, d_k, bias=False)
        self.v = nn.Linear(dim, d_v, bias=False)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        w = torch.softmax(q @ k.transpose(1, 2) / self.d_k ** 0.5, dim=-1)
        return w @ v


# --- softmax by hand, and online over key blocks ----------------------------------------------------

class ManualSoftmax(_QKV):
    def forward(self, x):
        q, k, v = self.split(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
        w = e / e.sum(dim=-1, keepdim=True)
        return self.merge(w @ v)


class OnlineSoftmaxBlocks(_QKV):
    """Flash-attention's recurrence in plain torch: keys in blocks, a running max and sum."""

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        q = q / math.sqrt(self.hd)
        m = torch.full(q.shape[:-1] + (1,), float("-inf"))
        denom = torch.zeros_like(m)
        acc = torch.zeros_like(q)
        for start in range(0, T, 3):
            kb, vb = k[:, :, start:start + 3], v[:, :, start:start + 3]
            s = q @ kb.transpose(-2, -1)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            correction = torch.exp(m - m_new)
            p = torch.exp(s - m_new)
            denom = denom * correction + p.sum(dim=-1, keepdim=True)
            acc = acc * correction + p @ vb
            m = m_new
        return self.merge(acc / denom)


# --- weights changed after the softmax, and renormalised ------------------------------------------------

class MaskAfterSoftmaxRenormalised(_QKV):
    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        w = (q @ k.transpose(-2, -1) / math.sqrt(self.hd)).softmax(dim=-1)
        keep = torch.ones(T, T).tril()
        w = w * keep
        w = w / w.sum(dim=-1, keepdim=True)
        return self.merge(w @ v)


class DoublyNormalised(_QKV):
    """Softmax over the queries, then each query's weights renormalised over the keys."""

    def forward(self, x):
        q, k, v = self.split(x)
        w = (q @ k.transpose(-2, -1) / math.sqrt(self.hd)).softmax(dim=-2)
        w = w / w.sum(dim=-1, keepdim=True)
        return self.merge(w @ v)


class TalkingHeads(_QKV):
    """Talking-heads attention: the heads mixed by a learned (H, H) matrix before and after
    the softmax (over the keys)."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.pre = nn.Parameter(torch.eye(heads) + 0.01 * torch.randn(heads, heads))
        self.post = nn.Parameter(torch.eye(heads) + 0.01 * torch.randn(heads, heads))

    def forward(self, x):
        q, k, v = self.split(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        s = torch.einsum("bhij,hg->bgij", s, self.pre)
        w = s.softmax(dim=-1)
        w = torch.einsum("bgij,gh->bhij", w, self.post)
        return self.merge(w @ v)


# --- masks in every spelling ----------------------------------------------------------------------------

class WhereMaskScalarTensor(_QKV):
    INIT = {"dim": "C", "heads": "H", "block_size": "L"}

    def __init__(self, dim, heads, block_size):
        super().__init__(dim, heads)
        self.register_buffer("causal", torch.ones(block_size, block_size).tril().view(1, 1, block_size, block_size))

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        s = torch.matmul(q, k.transpose(-1, -2)) / torch.tensor(self.hd, dtype=q.dtype).sqrt()
        s = torch.where(self.causal[:, :, :T, :T].bool(), s, torch.tensor(torch.finfo(s.dtype).min))
        return self.merge(torch.softmax(s, dim=-1) @ v)


class InPlaceMaskedFill(_QKV):
    """``masked_fill_`` in place, its result unassigned on purpose."""

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        s = q @ k.transpose(-2, -1) * self.hd ** -0.5
        s.masked_fill_(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        return self.merge(s.softmax(-1) @ v)


class MinusLargeUint8Mask(_QKV):
    """An additive mask (1 - mask) * -10000 from a uint8 tril, BERT-style extended mask."""

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.shape[1]
        mask = torch.tril(torch.ones(T, T, dtype=torch.uint8))
        extended = (1.0 - mask[None, None].to(q.dtype)) * -10000.0
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd) + extended
        return self.merge(nn.functional.softmax(s, dim=-1) @ v)


# --- attention pieces kept outside forward's result ------------------------------------------------------

class StoresAttentionMaps(_QKV):
    """Keeps the weights on the module for plotting and returns the output only."""

    def forward(self, x):
        q, k, v = self.split(x)
        w = (q @ k.transpose(-2, -1) / math.sqrt(self.hd)).softmax(-1)
        self.last_attention = w.detach()
        self.maps = [w.mean(dim=1)]
        return self.merge(w @ v)


class ReturnsTupleWithWeights(_QKV):
    def forward(self, x):
        q, k, v = self.split(x)
        w = (q @ k.transpose(-2, -1) / math.sqrt(self.hd)).softmax(-1)
        return self.merge(w @ v), w.mean(1)
