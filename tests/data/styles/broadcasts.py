"""Matmuls that broadcast batch axes: the legal idioms stay clean, a size-1 axis lost by
accident (a slice, a keepdim reduction) is a silent-broadcast warning at its line."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _split(x, n_head):
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)


class _Attention(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head, self.d = n_head, n_embd // n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.per_head = nn.Parameter(torch.randn(1, n_head, self.d, self.d) / math.sqrt(self.d))
        self.heads_in = nn.Parameter(torch.randn(n_head, n_embd, self.d) / math.sqrt(n_embd))

    def heads(self, x):
        return [_split(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1)]

    def merge(self, y):
        B, H, T, d = y.shape
        return y.transpose(1, 2).reshape(B, T, H * d)


# --- correct ----------------------------------------------------------------------------------------

class PerHeadMatrix(_Attention):
    """A learned (1, H, d, d) matrix per head, shared by every sample."""

    def forward(self, x):
        q, k, v = self.heads(x)
        q = q @ self.per_head
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        return self.merge(att @ v)


class PerHeadProjection(_Attention):
    """Heads made by x.unsqueeze(1) @ W (H, C, d): the size-1 axis is put there on purpose."""

    def forward(self, x):
        q = x.unsqueeze(1) @ self.heads_in
        k = x[:, None] @ self.heads_in
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        return self.merge(att @ q)


class ConstantMixing(_Attention):
    """A (1, 1, T, T) averaging matrix built from constants, applied to every head and sample."""

    def forward(self, x):
        q, k, v = self.heads(x)
        T = x.shape[1]
        avg = torch.tril(torch.ones(T, T))
        avg = (avg / avg.sum(-1, keepdim=True))[None, None]
        return self.merge(avg @ v)


class MultiQueryValues(_Attention):
    """One value head, (B, 1, T, d), cut from the projection and broadcast over the H heads."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        v1 = v[:, :1]
        k1 = k[:, :1]
        att = F.softmax(q @ k1.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        return self.merge(att @ v1)


class LinearAttentionDenominator(_Attention):
    """The keepdim sum over the keys is a matrix axis, not a batch axis."""

    def forward(self, x):
        q, k, v = self.heads(x)
        q, k = q.softmax(dim=-1), k.softmax(dim=-2)  # Efficient Attention (Shen et al.)
        z = q @ k.sum(dim=-2, keepdim=True).transpose(-2, -1)
        return self.merge((q @ (k.transpose(-2, -1) @ v)) / z)


class MeanQueryPooling(_Attention):
    """A per-sample summary query, (B, H, 1, d): the query axis, not a batch axis."""

    def forward(self, x):
        q, k, v = self.heads(x)
        summary = q.mean(dim=2, keepdim=True)
        att = F.softmax(summary @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        return (att @ v).flatten(1)


# --- buggy ------------------------------------------------------------------------------------------

class FirstSampleKeys(_Attention):
    """The keys of the first sample only: every sample attends over sample 0's keys."""

    BUG = "silent-broadcast"

    def forward(self, x):
        q, k, v = self.heads(x)
        scores = q @ k[:1].transpose(-2, -1) / math.sqrt(self.d)  # BUG
        return self.merge(F.softmax(scores, dim=-1) @ v)


class ViewsCollapsed(nn.Module):
    """Two views per sample, (B, 2, T, C): the keys of the views averaged with keepdim by
    mistake, so both views attend over one shared key set."""

    INIT = {"n_embd": "C"}
    INPUTS = ["x=B,2,T,C"]
    BUG = "silent-broadcast"

    def __init__(self, n_embd):
        super().__init__()
        self.q = nn.Linear(n_embd, n_embd)
        self.k = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        q, k = self.q(x), self.k(x).mean(dim=1, keepdim=True)
        att = (q @ k.transpose(-2, -1)).softmax(dim=-1)  # BUG
        return att @ x
