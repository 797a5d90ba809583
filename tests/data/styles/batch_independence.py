"""Batch styles for the batch-leak check: norms that read the batch only in training (BatchNorm
in eval on flattened tokens, a hand-written batch norm with running buffers, GroupNorm per
sample), padding masks built from a lengths input (right padding), a prefix-LM with a prefix
length per sample, top-1 mixture-of-experts routing without capacity (expert weights gathered
per token), normalisation over the features. Buggy twins (``BUG = "batch-leak"``, the line
marked ``# BUG``): a BatchNorm that keeps no running statistics (batch statistics in eval
too), a hand-written batch norm whose guard lets eval use the batch, expert-choice routing
(each expert picks its tokens from the whole batch), a padding mask built from the first
sample's length, ``F.normalize`` over the batch axis."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Attention(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def attend(self, x, keep):
        """``keep``: a boolean mask broadcast against (B, H, T, T) scores."""
        B, T, C = x.shape
        q, k, v = [t.view(B, T, self.h, self.dk).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1)]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        scores = scores.masked_fill(~keep, float("-inf"))
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


# --- norms -----------------------------------------------------------------------------------------

class BatchNormOnTokens(_Attention):
    """BatchNorm1d over the (B*T, C) tokens: batch statistics in training, running ones in eval."""

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.bn = nn.BatchNorm1d(d_model)

    def forward(self, x):
        B, T, C = x.shape
        x = self.bn(x.reshape(B * T, C)).view(B, T, C)
        return self.attend(x, torch.ones(T, T, dtype=torch.bool))


class BatchNormWithoutRunningStats(BatchNormOnTokens):
    """``track_running_stats=False``: there is nothing to use in eval but the batch."""

    BUG = "batch-leak"

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.bn = nn.BatchNorm1d(d_model, track_running_stats=False)

    def forward(self, x):
        B, T, C = x.shape
        x = self.bn(x.reshape(B * T, C)).view(B, T, C)  # BUG
        return self.attend(x, torch.ones(T, T, dtype=torch.bool))


class HandBatchNorm(nn.Module):
    """A batch norm written out: batch statistics and a momentum update when training, the
    running buffers in eval."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.register_buffer("running_mean", torch.zeros(dim))
        self.register_buffer("running_var", torch.ones(dim))

    def forward(self, x):
        if self.training:
            mean, var = x.mean(dim=(0, 1)), x.var(dim=(0, 1), unbiased=False)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var, self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class HandBatchNormLargeBatchGuard(HandBatchNorm):
    """"Batch statistics whenever there is a batch": eval with B > 1 reads the other samples."""

    BUG = "batch-leak"

    def forward(self, x):
        if self.training or x.shape[0] > 1:
            mean, var = x.mean(dim=(0, 1)), x.var(dim=(0, 1), unbiased=False)  # BUG
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class GroupNormPerSample(nn.Module):
    """A conv block on (B, C, T) with GroupNorm: groups of channels over time, sample by sample."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, 3, padding=1)
        self.norm = nn.GroupNorm(11, dim)

    def forward(self, x):
        return F.gelu(self.norm(self.conv(x.transpose(1, 2)))).transpose(1, 2)


class NormalizeFeatures(nn.Module):
    """Cosine-similarity attention: queries and keys L2-normalised over their features."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.tensor(10.0))

    def forward(self, x):
        q = F.normalize(self.q(x), dim=-1)
        k = F.normalize(self.k(x), dim=-1)
        return torch.softmax(self.scale * q @ k.transpose(1, 2), dim=-1) @ self.v(x)


class NormalizeOverBatch(NormalizeFeatures):
    BUG = "batch-leak"

    def forward(self, x):
        q = F.normalize(self.q(x), dim=0)  # BUG
        k = F.normalize(self.k(x), dim=-1)
        return torch.softmax(self.scale * q @ k.transpose(1, 2), dim=-1) @ self.v(x)


# --- padding and prefixes given per sample ---------------------------------------------------------

class RightPaddedLengths(_Attention):
    """Right padding: sample b has ``lengths[b] + 1`` real tokens, the keys after are masked."""

    INPUTS = ["x=B,T,C", "lengths=B:long:T"]

    def forward(self, x, lengths):
        T = x.shape[1]
        valid = torch.arange(T)[None, :] < (lengths + 1)[:, None]          # (B, T) keys
        return self.attend(x, valid[:, None, None, :])


class RightPaddedFirstLength(RightPaddedLengths):
    """Every sample masked with the first sample's length. The mask has no batch axis, so the
    first op where another sample's output changes is the fill in ``attend``."""

    BUG = "batch-leak"
    FOUND_AT = "scores.masked_fill(~keep"

    def forward(self, x, lengths):
        T = x.shape[1]
        valid = torch.arange(T)[None, :] < lengths[0] + 1  # BUG
        return self.attend(x, valid[:, None, None, :])


class PrefixLMPerSample(_Attention):
    """A prefix-LM whose prefix length differs per sample: a token sees every prefix token and
    the tokens up to itself. Not causal (the prefix is read both ways), and says so."""

    INPUTS = ["x=B,T,C", "prefix_len=B:long:T"]
    causal = False

    def forward(self, x, prefix_len):
        T = x.shape[1]
        pos = torch.arange(T)
        seen = (pos[None, :] <= pos[:, None])[None] | (pos[None, None, :] < prefix_len[:, None, None])
        return self.attend(x, seen[:, None])


# --- mixture of experts ----------------------------------------------------------------------------

class Top1MoEGatheredWeights(nn.Module):
    """Switch-style top-1 routing without a capacity: each token's expert weights are gathered
    and applied with a batched matmul, scaled by its router probability."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, n_experts=4):
        super().__init__()
        self.router = nn.Linear(dim, n_experts)
        self.w = nn.Parameter(torch.randn(n_experts, dim, dim) / math.sqrt(dim))

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.reshape(B * T, C)
        probs = self.router(tokens).softmax(dim=-1)
        gate, expert = probs.max(dim=-1)
        y = torch.bmm(tokens[:, None, :], self.w[expert]).squeeze(1)
        return (gate[:, None] * y).view(B, T, C)


class ExpertChoiceRouting(Top1MoEGatheredWeights):
    """Expert-choice routing: each expert takes its top tokens from the whole batch, so what a
    token gets depends on the other samples."""

    BUG = "batch-leak"

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.reshape(B * T, C)
        affinity = self.router(tokens).softmax(dim=0)                      # over all tokens
        gate, chosen = affinity.topk(B * T // 4, dim=0)  # BUG
        out = torch.zeros_like(tokens)
        for e in range(self.w.shape[0]):
            y = tokens[chosen[:, e]] @ self.w[e] * gate[:, e, None]
            out = out.index_add(0, chosen[:, e], y)
        return out.view(B, T, C)
