"""A factored projection averaged over its rank (``bmm(A, B).div_(rank)``: tensor product
attention's q and k) makes q and k: its division is the product's mean, not a scale of the
scores, and attention-scale stays quiet; q divided again by sqrt(d) after it was made (scaled
twice, with SDPA's own) is still a scale."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st


class FactoredQK(nn.Module):
    def __init__(self, dim, heads, rank=2):
        super().__init__()
        self.heads, self.rank, self.head_dim = heads, rank, dim // heads
        self.a_q = nn.Linear(dim, heads * rank)
        self.b_q = nn.Linear(dim, rank * self.head_dim)
        self.a_k = nn.Linear(dim, heads * rank)
        self.b_k = nn.Linear(dim, rank * self.head_dim)
        self.v = nn.Linear(dim, dim)

    def _factored(self, a, b, x):
        n, t, _ = x.shape
        a = a(x).view(n * t, self.heads, self.rank)
        b = b(x).view(n * t, self.rank, self.head_dim)
        return torch.bmm(a, b).div_(self.rank).view(n, t, self.heads, self.head_dim)

    def forward(self, x):
        n, t, c = x.shape
        q = self._factored(self.a_q, self.b_q, x).transpose(1, 2)
        k = self._factored(self.a_k, self.b_k, x).transpose(1, 2)
        v = self.v(x).view(n, t, self.heads, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(n, t, c)


class QScaledByRank(FactoredQK):
    def forward(self, x):
        n, t, c = x.shape
        q = self._factored(self.a_q, self.b_q, x).transpose(1, 2) / self.head_dim ** 0.5
        k = self._factored(self.a_k, self.b_k, x).transpose(1, 2)
        v = self.v(x).view(n, t, self.heads, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(n, t, c)


def _rules(cls):
    # a head size of 16 = 2**4: the rank's means (1/2 on q, 1/2 on k) times 1/sqrt(16) make
    # 1/16, which read as scales would be 1/d for 1/sqrt(d)
    result = st.check(cls, init={"dim": "C", "heads": "H"},
                      dims={"H": 4, "d": 16, "C": 64}).targets[0]
    assert result.error is None, result.error
    return [d.rule for d in result.diagnostics if d.rule == "attention-scale"]


def test_a_factored_projection_s_mean_is_not_a_scale():
    assert _rules(FactoredQK) == []


def test_q_divided_again_after_it_was_made_is_a_scale():
    assert _rules(QScaledByRank) == ["attention-scale"]
