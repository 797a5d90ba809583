"""non-finite by meaning: only a NaN or an Inf that reaches the output is a bug, reported at
the op that made it.

Every module is built as ``Model(n_embd, n_head)`` and called with ``x`` (B, T, C). In each buggy
module the line the finding must point at ends with ``# BUG: non-finite``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                             max_distance=128):
    """Hugging Face T5's buckets: log(0) at distance 0, dropped by the torch.where."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


class _Heads(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd)

    def split(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        return [t.view(B, T, self.n_head, self.head_size).transpose(1, 2) for t in (q, k, v)]

    def merge(self, y):
        B, H, T, d = y.shape
        return self.proj(y.transpose(1, 2).reshape(B, T, H * d))


# --- correct: the NaN or Inf is made, then dropped before the output -------------------------

class T5Buckets(_Heads):
    """T5's relative attention bias, unscaled scores as T5 has them."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        self.bias = nn.Embedding(32, n_head)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.split(x)
        position = torch.arange(T, dtype=torch.long)
        relative = position[None, :] - position[:, None]
        buckets = relative_position_bucket(relative)
        bias = self.bias(buckets).permute(2, 0, 1).unsqueeze(0)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size) + bias
        return self.merge(scores.softmax(dim=-1) @ v)


class SafeLogWhere(nn.Module):
    """log of a value that may be 0, kept only where it is positive."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = F.relu(self.proj(x))
        logs = torch.where(h > 0, torch.log(h), torch.zeros_like(h))
        return x + logs


class PaddedQueriesZeroed(_Heads):
    """A fully padded sample gives NaN rows, which nan_to_num turns back into zeros."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        lengths = torch.arange(B)
        visible = torch.arange(T)[None, :] < lengths[:, None]  # sample 0 sees no key
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
        att = torch.nan_to_num(scores.softmax(dim=-1), nan=0.0)
        return self.merge(att @ v)


class CheckedThenDropped(_Heads):
    """Fully masked rows found and replaced with torch.where before the values."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        visible = torch.arange(T)[None, :] < torch.arange(B)[:, None]
        visible = visible[:, None, None, :]
        scores = (q @ k.transpose(-2, -1) / math.sqrt(self.head_size)).masked_fill(~visible,
                                                                                 float("-inf"))
        att = scores.softmax(dim=-1)
        att = torch.where(visible.any(dim=-1, keepdim=True), att, torch.zeros_like(att))
        return self.merge(att @ v)


CORRECT = [T5Buckets, SafeLogWhere, PaddedQueriesZeroed, CheckedThenDropped]


# --- buggy: the NaN or Inf reaches the output -------------------------------------------------

class FullyMaskedSample(_Heads):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        visible = torch.arange(T)[None, :] < torch.arange(B)[:, None]  # sample 0 sees no key
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
        att = F.softmax(scores, dim=-1)  # BUG: non-finite
        return self.merge(att @ v)


class T5BucketsThenMaskedRow(T5Buckets):
    """The buckets' log(0) is harmless; the fully masked row after it is not."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        position = torch.arange(T, dtype=torch.long)
        buckets = relative_position_bucket(position[None, :] - position[:, None])
        bias = self.bias(buckets).permute(2, 0, 1).unsqueeze(0)
        scores = q @ k.transpose(-2, -1) + bias
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool), float("-inf"))
        att = scores.softmax(-1)  # BUG: non-finite
        return self.merge(att @ v)


class LogOfRelu(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = F.relu(self.proj(x))
        return x + torch.log(h)  # BUG: non-finite


class NormalisedByZeroNorm(nn.Module):
    """Unit-normalising rows, one of which is all zero: 0/0."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = self.proj(x)
        h = h * (torch.arange(x.shape[1]) > 0)[None, :, None]
        unit = h / h.norm(dim=-1, keepdim=True)  # BUG: non-finite
        return unit.sum(dim=1)


BUGGY = [FullyMaskedSample, T5BucketsThenMaskedRow, LogOfRelu, NormalisedByZeroNorm]
