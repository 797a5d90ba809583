"""A pooling attention whose first ``num_queries`` tokens ask and the rest answer."""

import torch.nn as nn


class QueryTokensPool(nn.Module):
    def __init__(self, dim: int, num_heads: int = 8, num_queries: int = 100):
        super().__init__()
        self.num_heads = num_heads
        self.num_queries = num_queries
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        n = self.num_queries
        q = self.q(x[:, :n]).reshape(B, n, self.num_heads, C // self.num_heads).transpose(1, 2)
        k, v = self.kv(x[:, n:]).reshape(B, N - n, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        w = (q @ k.transpose(-2, -1) * (C // self.num_heads) ** -0.5).softmax(dim=-1)
        return self.proj((w @ v).transpose(1, 2).reshape(B, n, C))
