"""Buggy modules whose finding comes with a corrected line: pasting that line over the user's
line must make the module clean (tests/test_fixes.py). Two or more code styles per rule.

Every module is built as ``Model(n_embd, n_head)`` and called with ``x`` (B, T, C); the line the
finding points at ends with ``# BUG: <rule>``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import nn as tnn


class _Base(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)


# --- reshape-jumble ---------------------------------------------------------------------------

class SplitJumbleReshape(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.reshape(B, self.n_head, T, C // self.n_head)  # BUG: reshape-jumble
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class SplitJumbleViewTuple(_Base):
    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, self.head_size
        q, k, v = self.c_attn(x).chunk(3, dim=-1)
        q, k = (t.view(B, T, H, d).transpose(1, 2) for t in (q, k))
        v = v.view((B, H, T, d))  # BUG: reshape-jumble
        att = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class MergeWithoutTranspose(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.c_proj(y.reshape(B, T, C))  # BUG: reshape-jumble


class MergeViewWithoutTranspose(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        y = torch.softmax(q @ k.mT * self.head_size ** -0.5, dim=-1) @ v
        y = y.contiguous().view(B, T, C)  # BUG: reshape-jumble
        return self.c_proj(y)


class MergeProductWithoutTranspose(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        y = (att @ v).reshape(B, T, C)  # BUG: reshape-jumble
        return self.c_proj(y)


class TimeFirstByView(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        y = self.c_proj(y).view(T, B, C)  # BUG: reshape-jumble
        return y.transpose(0, 1)


# --- reversed-transpose -----------------------------------------------------------------------

class DotTKeys(_Base):
    def forward(self, x):
        B, T, C = x.shape
        queries, keys, values = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                                 for t in self.c_attn(x).split(C, dim=2))
        attn_scores = queries @ keys.T  # BUG: reversed-transpose
        attn = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return self.c_proj((attn @ values).transpose(1, 2).reshape(B, T, C))


class DotTOfProjection(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        scores = q @ (k * 1.0).T / math.sqrt(self.head_size)  # BUG: reversed-transpose
        return self.c_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class DotTCallKeys(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        kt = k.t()  # BUG: reversed-transpose
        att = F.softmax(torch.matmul(q, kt) / math.sqrt(self.head_size), dim=-1)
        return self.c_proj(torch.matmul(att, v).transpose(1, 2).reshape(B, T, C))


# --- softmax-axis -----------------------------------------------------------------------------

class SoftmaxDimOne(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=1)  # BUG: softmax-axis
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class SoftmaxNoDim(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_size)
        att = F.softmax(scores)  # BUG: softmax-axis
        return self.c_proj(torch.einsum("bhqk,bhkd->bhqd", att, v).transpose(1, 2).reshape(B, T, C))


class SoftmaxMethodPositional(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.reshape(B * self.n_head, T, self.head_size)
                   for t in (t.view(B, T, self.n_head, -1).transpose(1, 2)
                             for t in self.c_attn(x).split(C, dim=2)))
        w = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_size)
        w = w.softmax(0)  # BUG: softmax-axis
        y = torch.bmm(w, v).view(B, self.n_head, T, self.head_size)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


# --- discarded-result -------------------------------------------------------------------------

class MaskedFillDropped(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        attn_scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        attn_scores.masked_fill(causal, float("-inf"))  # BUG: discarded-result
        return self.c_proj((attn_scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class ClampDroppedFourLines(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        self.scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        self.scores.clamp(  # BUG: discarded-result
            min=-30.0,
            max=30.0,
        )
        return self.c_proj((self.scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


# --- noncontiguous-view -----------------------------------------------------------------------

class ViewAfterTranspose(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).view(B, T, C))  # BUG: noncontiguous-view


class ViewAfterPermute(_Base):
    def forward(self, x):
        B, T, C = x.shape
        qkv = self.c_attn(x).view(B, T, 3, self.n_head, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        y = torch.softmax(q @ k.transpose(-2, -1) * self.head_size ** -0.5, -1) @ v
        y = y.permute(0, 2, 1, 3)
        y = y.view(B, T, C)  # BUG: noncontiguous-view
        return self.c_proj(y)


# --- attention-scale --------------------------------------------------------------------------

class ScaleSqrtEmbd(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(C)  # BUG: attention-scale
        return self.c_proj((att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C))


class ScaleMulHeads(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        scores = torch.matmul(q, k.transpose(-2, -1))
        scores = scores * self.n_head ** -0.5  # BUG: attention-scale
        return self.c_proj((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C))


class ScaledTwiceEinsum(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        q = q / math.sqrt(self.head_size)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_size)  # BUG: attention-scale
        att = scores.softmax(dim=-1)
        return self.c_proj(torch.einsum("bhqk,bhkd->bhqd", att, v).transpose(1, 2).reshape(B, T, C))


# --- op-failed: fixed where the wrong operand was made ----------------------------------------

class ValuesNeverTransposed(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_size).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_size).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_size)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))  # BUG: op-failed


class KeysTransposedWrongAxes(_Base):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.head_size), -1)  # BUG: op-failed
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


BUGGY = [SplitJumbleReshape, SplitJumbleViewTuple, MergeWithoutTranspose,
         MergeViewWithoutTranspose, MergeProductWithoutTranspose, TimeFirstByView, DotTKeys,
         DotTOfProjection, DotTCallKeys, SoftmaxDimOne, SoftmaxNoDim,
         SoftmaxMethodPositional, MaskedFillDropped, ClampDroppedFourLines, ViewAfterTranspose,
         ViewAfterPermute, ScaleSqrtEmbd, ScaleMulHeads, ScaledTwiceEinsum, ValuesNeverTransposed,
         KeysTransposedWrongAxes]
CORRECT: list = []
