"""Raschka's MultiHeadAttentionWrapper with the mask result dropped in every Head (the bug
repeats in each of the heads). No INPUTS: tests/test_one_finding.py checks it, not the style corpus."""

import torch, torch.nn as nn

class Head(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
    def forward(self, x):
        b, n, d = x.shape
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        s = queries @ keys.transpose(1, 2)
        s.masked_fill(self.mask.bool()[:n, :n], -torch.inf)  # BUG: discarded-result
        w = torch.softmax(s / keys.shape[-1] ** 0.5, dim=-1)
        return w @ values

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.heads = nn.ModuleList([Head(d_in, d_out, context_length, dropout) for _ in range(num_heads)])
    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)
