"""Ops that make their value constant (constant-result), and correct modules that look alike.

Each buggy module marks the line the rule must point at with ``# BUG``.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DiagonalWeights(nn.Module):
    """The weights' key axis gets the query's letter: a diagonal instead of a weighted sum."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).unbind(2)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(C // self.n_head)
        w = s.softmax(-1)
        y = torch.einsum("bhqq,bqhd->bqhd", w, v)  # BUG
        return y.reshape(B, T, C)


class ContractedWeights(DiagonalWeights):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).unbind(2)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(C // self.n_head)
        w = s.softmax(-1)
        y = torch.einsum("bhqk,bkhd->bqhd", w, v)
        return y.reshape(B, T, C)


class NormOverScore(nn.Module):
    """A layer norm over a projection to one value: the output is the norm's bias."""

    def __init__(self, n_embd):
        super().__init__()
        self.gate = nn.Linear(n_embd, 1)
        self.norm = nn.LayerNorm(1)

    def forward(self, x):
        g = self.norm(self.gate(x))  # BUG
        return x * torch.sigmoid(g)


class TopOneRouter(nn.Module):
    """A router that keeps its best expert, its weight renormalised over the k=1 kept: by design."""

    def __init__(self, n_embd, n_experts=3):
        super().__init__()
        self.router = nn.Linear(n_embd, n_experts)
        self.experts = nn.ModuleList(nn.Linear(n_embd, n_embd) for _ in range(n_experts))

    def forward(self, x):
        logits = self.router(x)
        top, index = logits.topk(1, dim=-1)
        weight = top.softmax(dim=-1)
        out = torch.stack([e(x) for e in self.experts], dim=-2)  # (B, T, E, C)
        picked = out.gather(-2, index.unsqueeze(-1).expand(*index.shape, x.shape[-1]))
        return (weight.unsqueeze(-1) * picked).sum(-2)


class InBatchPositives(nn.Module):
    """Contrastive logits between samples: their diagonal (the positives) is taken by design."""

    def __init__(self, n_embd):
        super().__init__()
        self.a = nn.Linear(n_embd, n_embd)
        self.b = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        za, zb = self.a(x.mean(1)), self.b(x.mean(1))
        logits = torch.einsum("ic,jc->ij", za, zb)
        positives = torch.einsum("ii->i", logits)
        return logits.logsumexp(-1) - positives


class SumNormalisedOverScore(nn.Module):
    """Positive scores normalised by their own sum over the (B, T, 1) size-1 axis."""

    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, 1)

    def forward(self, x):
        s = F.softplus(self.score(x))
        w = s / s.sum(dim=-1, keepdim=True)  # BUG
        return (w * x).sum(dim=1)


class SumNormalisedOverPositions(SumNormalisedOverScore):
    def forward(self, x):
        s = F.softplus(self.score(x))
        w = s / s.sum(dim=1, keepdim=True)
        return (w * x).sum(dim=1)


class AdditiveOverSizeOne(nn.Module):
    """Additive attention of one decoder state over encoder steps, its softmax layer built over
    the size-1 score axis: every weight is 1, the context a plain sum of the steps."""

    def __init__(self, n_embd):
        super().__init__()
        self.w_enc = nn.Linear(n_embd, n_embd)
        self.w_dec = nn.Linear(n_embd, n_embd)
        self.v = nn.Linear(n_embd, 1)
        self.softmax = nn.Softmax(dim=2)  # BUG

    def forward(self, x):
        state = x[:, -1]
        scores = self.v(torch.tanh(self.w_enc(x) + self.w_dec(state)[:, None]))  # (B, T, 1)
        return (self.softmax(scores) * x).sum(dim=1)


class AdditiveOverSteps(AdditiveOverSizeOne):
    def __init__(self, n_embd):
        super().__init__(n_embd)
        self.softmax = nn.Softmax(dim=1)


class ScoredByWeightVector(nn.Module):
    """Additive token weighting: each token scored against a learned vector (``query @ w_g``,
    (B, T, 1)), then normalised over the size-1 score axis instead of over the tokens: every
    weight is 1, the learned vector has no effect, the global query a plain sum."""

    def __init__(self, n_embd):
        super().__init__()
        self.to_query = nn.Linear(n_embd, n_embd)
        self.w_g = nn.Parameter(torch.randn(n_embd, 1))
        self.proj = nn.Linear(n_embd, n_embd)

    def weights(self, scores):
        return scores.softmax(dim=-1)  # BUG

    def forward(self, x):
        query = F.normalize(self.to_query(x), dim=-1)
        scores = query @ self.w_g * query.shape[-1] ** -0.5
        pooled = (self.weights(scores) * query).sum(dim=1, keepdim=True)
        return self.proj(pooled * x) + query


class ScoredOverTokens(ScoredByWeightVector):
    def weights(self, scores):
        return scores.softmax(dim=1)
