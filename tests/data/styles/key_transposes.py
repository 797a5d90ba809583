"""reversed-transpose, written the ways books and students write a key transpose: ``k.T`` on a
2-D single-sequence attention (right there: the tensor has two axes), ``.mT``, a
``permute(0, 1, 3, 2)`` that swaps the last two axes, ``permute(0, 2, 1)`` for a Conv1d, a
per-sample loop with ``k[b].T``, ``torch.t`` on a weight matrix; and buggy twins that reverse
every axis of a batched tensor (``k.T`` on (B, T, d), a reversed permute, ``.T`` on
(B, H, T, d)), each marked ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _SingleHead(nn.Module):
    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.d = d_model
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)


# --- correct ----------------------------------------------------------------------------------------

class OneSequenceKT(nn.Module):
    """A lecture's first attention: one sequence (T, C), no batch, so ``k.T`` is the matrix
    transpose it means."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.W_q = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.W_k = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.W_v = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))

    def forward(self, x):
        q, k, v = x @ self.W_q, x @ self.W_k, x @ self.W_v
        att = torch.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1)
        return att @ v


class BatchedMT(_SingleHead):
    """``k.mT``: the batched matrix transpose."""

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        return torch.softmax(q @ k.mT / math.sqrt(self.d), dim=-1) @ v


class PermuteLastTwo(nn.Module):
    """Heads split by a reshape, keys transposed with ``permute(0, 1, 3, 2)``."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.h = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.permute(0, 1, 3, 2) / math.sqrt(C // self.h)
        y = scores.softmax(-1) @ v
        return self.out(y.permute(0, 2, 1, 3).reshape(B, T, C))


class PerSampleLoop(_SingleHead):
    """A loop over the batch: each ``k[b]`` is (T, C), so ``.T`` is a matrix transpose."""

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        outs = []
        for b in range(x.shape[0]):
            att = F.softmax(q[b] @ k[b].T / math.sqrt(self.d), dim=-1)
            outs.append(att @ v[b])
        return torch.stack(outs)


class ConvOverTime(nn.Module):
    """``permute(0, 2, 1)`` puts channels first for a Conv1d and back: a swap, not a reversal."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, kernel_size=3, padding=1, groups=d_model)
        self.q = nn.Linear(d_model, d_model)

    def forward(self, x):
        x = self.conv(x.permute(0, 2, 1)).permute(0, 2, 1)
        q = self.q(x)
        att = (q @ x.transpose(1, 2) / math.sqrt(x.shape[-1])).softmax(-1)
        return att @ x


class ManualLinearWeightT(_SingleHead):
    """``x @ W.t()`` on a (C, C) weight, as F.linear does it."""

    def forward(self, x):
        q = x @ self.q.weight.t()
        k = x @ torch.t(self.k.weight)
        v = x @ self.v.weight.T
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1) @ v


class TimeFirstRoundTrip(nn.Module):
    """(B, T, C) -> (T, B, C) for a time-first nn.MultiheadAttention and back: 3 axes, but a
    swap of the first two."""

    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)

    def forward(self, x):
        x = x.permute(1, 0, 2)
        y, _ = self.mha(x, x, x, need_weights=False)
        return y.permute(1, 0, 2)


# --- buggy ------------------------------------------------------------------------------------------

class BatchedKT(_SingleHead):
    """The single-sequence lecture code given a batch: ``k.T`` on (B, T, C) is (C, T, B)."""

    BUG = "reversed-transpose"

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.T / math.sqrt(self.d)  # BUG
        return torch.softmax(scores, dim=-1) @ v


class ReversedPermute(nn.Module):
    """``permute(3, 2, 1, 0)`` where the last two axes were meant."""

    BUG = "reversed-transpose"
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.h = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        kt = k.permute(3, 2, 1, 0)  # BUG
        scores = q @ kt / math.sqrt(C // self.h)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class HeadsKT(nn.Module):
    """``k.T`` on (B, H, T, d), inside a helper that scores the heads."""

    BUG = "reversed-transpose"
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.h = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def score(self, q, k):
        return torch.matmul(q, k.T) / math.sqrt(q.size(-1))  # BUG

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        att = self.score(q, k).softmax(-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)


class ReversedForConv(nn.Module):
    """``permute(2, 1, 0)`` where a Conv1d wants (B, C, T): gives (C, T, B)."""

    BUG = "reversed-transpose"
    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, kernel_size=3, padding=1)

    def forward(self, x):
        return self.conv(x.permute(2, 1, 0)).permute(0, 2, 1)  # BUG
