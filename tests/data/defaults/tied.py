"""Modules whose constructor defaults say one size twice: a bank of learned queries as wide as
the model (``bank_dim=256`` and ``dim=256``), and a variant with a real bug the tied sizes
do not explain (the output projection reads the wrong width at any sizes)."""

import torch
import torch.nn.functional as F
from torch import nn


class QueryBank(nn.Module):
    """Learned queries attend over the input; the queries must be as wide as the model."""

    def __init__(self, n_queries=8, bank_dim=256, dim=256, n_attn_heads=4):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(1, n_queries, bank_dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.heads = n_attn_heads
        self.to_q = nn.Linear(dim, dim)
        self.to_kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def split(self, t):
        b, n, c = t.shape
        return t.view(b, n, self.heads, c // self.heads).transpose(1, 2)

    def forward(self, x):
        q = self.norm(self.queries.expand(x.shape[0], -1, -1))
        k, v = self.to_kv(self.norm(x)).chunk(2, dim=-1)
        q, k, v = self.split(self.to_q(q)), self.split(k), self.split(v)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).flatten(2))


class QueryBankWrongOut(QueryBank):
    """The bug: the output projection is built for the query bank's count, not the width."""

    def __init__(self, n_queries=8, bank_dim=256, dim=256, n_attn_heads=4):
        super().__init__(n_queries, bank_dim, dim, n_attn_heads)
        self.out = nn.Linear(n_queries, dim)


class FusedHeads(nn.Module):
    """One projection split into queries, keys and values by head counts that default to 1:
    shapetrace's width for ``out_features`` and the defaults do not add up."""

    def __init__(self, in_features, out_features, num_q_heads=1, q_head_dim=1, num_kv_heads=1, kv_head_dim=1):
        super().__init__()
        self.sizes = [num_q_heads * q_head_dim, num_kv_heads * kv_head_dim, num_kv_heads * kv_head_dim]
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, inputs):
        q, k, v = self.linear(inputs).split(self.sizes, dim=-1)
        return q, k, v
