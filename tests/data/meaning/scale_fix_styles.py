"""attention-scale findings whose corrected line adds, replaces or drops the scale, written with
the user's own head size (tests/test_fixes.py pastes the line back). Built as
``Model(n_embd, n_head)`` and called with ``x`` (B, T, C); ``# BUG: <rule>`` marks the line.
``NO_FIX`` lists findings where no head size is provable from the source: no corrected line.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Base(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)


class UnscaledMatmul(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_size).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_size).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_size).transpose(1, 2)
        att = q @ k.transpose(-2, -1)  # BUG: attention-scale
        att = att.softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class UnscaledInsideSoftmax(_Base):
    def forward(self, x):
        B, T, C = x.shape
        head_dim = C // self.n_head
        q, k, v = (t.reshape(B, T, self.n_head, head_dim).transpose(1, 2)
                   for t in self.c_attn(x).chunk(3, dim=-1))
        att = F.softmax(torch.matmul(q, k.mT), dim=-1)  # BUG: attention-scale
        return self.c_proj(torch.matmul(att, v).transpose(1, 2).reshape(B, T, C))


class UnscaledEinsumLocalSize(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head) for t in (q, k, v))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k)  # BUG: attention-scale
        att = scores.softmax(-1)
        return self.c_proj(torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(B, T, C))


class ScaleSqrtWidthOwnSize(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, self.head_size).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C)  # BUG: attention-scale
        return self.c_proj((att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C))


class SdpaScaleByWidth(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / math.sqrt(C))  # BUG: attention-scale
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class SdpaScaleOne(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, scale=1.0, is_causal=True)  # BUG: attention-scale
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class UnscaledNoProvableSize(_Base):
    """Sizes written as -1 and an operand that is no plain name: nothing proves a head size."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = torch.matmul(q.contiguous(), k.transpose(-2, -1)).softmax(-1)  # BUG: attention-scale
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class UnscaledSizeRebound(_Base):
    """``hs`` is bound twice in forward: its value at the scores line is not proven."""

    def forward(self, x):
        B, T, C = x.shape
        hs = self.head_size
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        hs = 1
        att = torch.matmul(q.contiguous(), k.transpose(-2, -1)).softmax(-1)  # BUG: attention-scale
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C)) * hs


BUGGY = [UnscaledMatmul, UnscaledInsideSoftmax, UnscaledEinsumLocalSize, ScaleSqrtWidthOwnSize,
         SdpaScaleByWidth, SdpaScaleOne]
NO_FIX = [UnscaledNoProvableSize, UnscaledSizeRebound]
