"""Styles for nondeterministic-eval and input-mutated: randomness that follows ``self.training``
(``F.dropout`` with the flag passed by position, stochastic depth from ``torch.rand``, noisy
top-k gating, a hand-written Bernoulli dropout), a KV cache passed in and written in place, a
0/1 ``attention_mask`` turned into an additive mask, an RMS norm of the input, all out of
place. Buggy twins: the same randomness left on in eval (``BUG = "nondeterministic-eval"``)
and the caller's mask or input converted in place (``BUG = "input-mutated"``), each marked
``# BUG`` on its line."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Block(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.attn_pdrop = dropout

    def heads(self, x):
        B, T, C = x.shape
        return [t.view(B, T, self.h, self.dk).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1)]

    def merge(self, y):
        B, H, T, d = y.shape
        return self.out(y.transpose(1, 2).reshape(B, T, H * d))

    def scores(self, q, k):
        T = q.shape[2]
        s = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        return s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))


# --- randomness that follows self.training --------------------------------------------------------

class DropoutFlagByPosition(_Block):
    """minGPT's attention dropout with ``training`` passed as the third positional argument."""

    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.dropout(self.scores(q, k).softmax(-1), self.attn_pdrop, self.training)
        return self.merge(att @ v)


class DropoutRateOnly(DropoutFlagByPosition):
    BUG = "nondeterministic-eval"

    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.dropout(self.scores(q, k).softmax(-1), self.attn_pdrop)  # BUG
        return self.merge(att @ v)


class StochasticDepthGuarded(_Block):
    """timm's drop_path written inline: a residual branch dropped per sample in training."""

    def __init__(self, d_model, n_heads, drop_path_rate=0.0):
        super().__init__(d_model, n_heads)
        self.drop_path_rate = drop_path_rate

    def forward(self, x):
        q, k, v = self.heads(x)
        branch = self.merge(self.scores(q, k).softmax(-1) @ v)
        if self.training and self.drop_path_rate > 0:
            keep = 1 - self.drop_path_rate
            mask = (torch.rand(x.shape[0], 1, 1, dtype=x.dtype) < keep).to(x.dtype)
            branch = branch * mask / keep
        return x + branch


class StochasticDepthUnguarded(StochasticDepthGuarded):
    BUG = "nondeterministic-eval"

    def forward(self, x):
        q, k, v = self.heads(x)
        branch = self.merge(self.scores(q, k).softmax(-1) @ v)
        keep = 1 - self.drop_path_rate
        mask = (torch.rand(x.shape[0], 1, 1, dtype=x.dtype) < keep).to(x.dtype)  # BUG
        return x + branch * mask / keep


class NoisyTopKGating(nn.Module):
    """Shazeer's noisy top-k gating: noise on the router logits in training only."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, n_experts=4, k=2):
        super().__init__()
        self.k = k
        self.router = nn.Linear(dim, n_experts)
        self.noise = nn.Linear(dim, n_experts)
        self.experts = nn.Parameter(torch.randn(n_experts, dim, dim) / math.sqrt(dim))

    def route(self, x, noisy):
        logits = self.router(x)
        if noisy:
            logits = logits + torch.randn_like(logits) * F.softplus(self.noise(x))
        top, idx = logits.topk(self.k, dim=-1)
        gates = torch.zeros_like(logits).scatter(-1, idx, top.softmax(-1))
        return torch.einsum("bte,btc,ecd->btd", gates, x, self.experts)

    def forward(self, x):
        return self.route(x, noisy=self.training)


class NoisyTopKGatingAlways(NoisyTopKGating):
    BUG = "nondeterministic-eval"
    VARIANT = "noise"  # Gaussian noise per sample: a warning, it may be meant

    def forward(self, x):
        logits = self.router(x)
        logits = logits + torch.randn_like(logits) * F.softplus(self.noise(x))  # BUG
        top, idx = logits.topk(self.k, dim=-1)
        gates = torch.zeros_like(logits).scatter(-1, idx, top.softmax(-1))
        return torch.einsum("bte,btc,ecd->btd", gates, x, self.experts)


class BernoulliDropoutGuarded(_Block):
    """Dropout written with ``torch.bernoulli``, applied only when training."""

    def __init__(self, d_model, n_heads, p_drop=0.0):
        super().__init__(d_model, n_heads)
        self.p_drop = p_drop

    def forward(self, x):
        q, k, v = self.heads(x)
        y = self.merge(self.scores(q, k).softmax(-1) @ v)
        if self.training:
            y = y * torch.bernoulli(torch.full_like(y, 1 - self.p_drop)) / (1 - self.p_drop)
        return y


class BernoulliDropoutUnguarded(BernoulliDropoutGuarded):
    BUG = "nondeterministic-eval"

    def forward(self, x):
        q, k, v = self.heads(x)
        y = self.merge(self.scores(q, k).softmax(-1) @ v)
        return y * torch.bernoulli(torch.full_like(y, 1 - self.p_drop)) / (1 - self.p_drop)  # BUG


# --- tensors the caller passed in -----------------------------------------------------------------

class CacheWrittenInPlace(_Block):
    """Llama's inference cache: the new keys and values are written into the caller's
    preallocated cache (it is there to be filled), then the first T slots are attended to."""

    INPUTS = ["x=B,T,C", "cache_k=B,H,S,d", "cache_v=B,H,S,d"]

    def forward(self, x, cache_k, cache_v):
        q, k, v = self.heads(x)
        T = x.shape[1]
        cache_k[:, :, :T] = k
        cache_v[:, :, :T] = v
        keys, values = cache_k[:, :, :T], cache_v[:, :, :T]
        return self.merge(self.scores(q, keys).softmax(-1) @ values)


class AdditiveMaskOutOfPlace(nn.Module):
    """BERT's extended attention mask: 0/1 ``attention_mask`` (right padded) to 0 / -10000."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C", "attention_mask=B,T:long:2"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def attend(self, x, extended):
        B, T, C = x.shape
        q, k, v = [t.view(B, T, self.h, self.dk).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1)]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk) + extended
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)

    def forward(self, x, attention_mask):
        extended = (attention_mask[:, None, None, :] - 1) * 10000.0
        return self.attend(x, extended)


class AdditiveMaskInPlace(AdditiveMaskOutOfPlace):
    """The same conversion done in place on a view: the caller's mask becomes 0 / -10000."""

    BUG = "input-mutated"

    def forward(self, x, attention_mask):
        extended = attention_mask[:, None, None, :].sub_(1).mul_(10000)  # BUG
        return self.attend(x, extended)


class RMSNormOfInput(nn.Module):
    """RMS-normalise the input, then a projection."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.proj(x * self.weight)


class RMSNormOfInputInPlace(RMSNormOfInput):
    BUG = "input-mutated"

    def forward(self, x):
        x.mul_(torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))  # BUG
        return self.proj(x * self.weight)
