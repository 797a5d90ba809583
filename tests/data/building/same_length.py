"""Attention that takes queries, keys and values apart but is made for self-attention: its
output adds a convolution of the values, so keys and values must be as long as the queries."""

import torch.nn as nn
import torch.nn.functional as F


class ValuesMixedBack(nn.Module):
    def __init__(self, d_model, h):
        super().__init__()
        self.h = h
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))
        self.local = nn.Conv1d(d_model, d_model, 3, padding=1, groups=d_model)

    def forward(self, queries, keys, values):
        B, T, C = queries.shape
        q = self.q(queries).view(B, T, self.h, -1).transpose(1, 2)
        k = self.k(keys).view(B, keys.size(1), self.h, -1).transpose(1, 2)
        v = self.v(values).view(B, values.size(1), self.h, -1).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        return out + self.local(values.transpose(1, 2)).transpose(1, 2)
