"""discarded-result by meaning: only a result that truly goes nowhere is a bug.

Every module is built as ``Model(n_embd, n_head)`` (inside ``shapetrace.trace()``, so that what
its constructor makes is traced too) and called with ``x`` (B, T, C). In each buggy module the
line the finding must point at ends with ``# BUG: discarded-result``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttentionV1(nn.Module):
    """The textbook's first self-attention: raw parameters from torch.rand."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


class LectureNotesHead(nn.Module):
    """The notes' head: nn.Parameter(torch.randn(d_model, d_k)), a tril buffer, an attribute."""

    def __init__(self, d_model: int, n_head: int, block_size: int = 32):
        super().__init__()
        d_k = d_model // n_head
        self.W_q = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.W_k = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.W_v = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.scale = torch.tensor(d_k ** -0.5)
        masks = []
        masks.append(torch.ones(block_size, dtype=torch.bool))
        self.keep = torch.stack(masks)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = x @ self.W_q, x @ self.W_k, x @ self.W_v
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return F.softmax(scores, dim=-1) @ v


class MaskFromHelper(nn.Module):
    """The mask comes back from a helper that returns it; the helper's caller uses it."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    @staticmethod
    def causal(T):
        return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def forward(self, x):
        scores = x @ self.proj(x).transpose(-2, -1) / math.sqrt(x.shape[-1])
        scores = scores.masked_fill(self.causal(x.shape[1]), float("-inf"))
        return scores.softmax(dim=-1) @ x


CORRECT = [SelfAttentionV1, LectureNotesHead, MaskFromHelper]


class MaskNotAssignedFourLines(LectureNotesHead):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = x @ self.W_q, x @ self.W_k, x @ self.W_v
        attn_scores = (q @ k.transpose(-2, -1)) * self.scale
        attn_scores.masked_fill(  # BUG: discarded-result
            self.tril[:T, :T] == 0,
            float("-inf"),
        )
        return F.softmax(attn_scores, dim=-1) @ v


class MaskNotAssignedOneLine(LectureNotesHead):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = x @ self.W_q, x @ self.W_k, x @ self.W_v
        attn_scores = (q @ k.transpose(-2, -1)) * self.scale
        attn_scores.masked_fill(self.tril[:T, :T] == 0, -torch.inf)  # BUG: discarded-result
        return F.softmax(attn_scores, dim=-1) @ v


class MaskedIntoAnUnreadName(SelfAttentionV1):
    def forward(self, x):
        T = x.shape[1]
        keys, queries, values = x @ self.W_key, x @ self.W_query, x @ self.W_value
        attn_scores = queries @ keys.transpose(-2, -1)
        mask = torch.triu(torch.ones(T, T), diagonal=1).bool()
        masked = attn_scores.masked_fill(mask, -torch.inf)  # BUG: discarded-result
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


BUGGY = [MaskNotAssignedFourLines, MaskNotAssignedOneLine, MaskedIntoAnUnreadName]
