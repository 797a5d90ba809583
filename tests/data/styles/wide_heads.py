"""Wide heads: every head as wide as the embedding (a blog's first multi-head version), so the
scale by the embedding size is the head size's scale."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class BloemWideSelfAttention(nn.Module):
    INIT = {"emb": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, emb, heads=8):
        super().__init__()
        k = emb
        self.k, self.heads = k, heads
        self.tokeys = nn.Linear(k, k * heads, bias=False)
        self.toqueries = nn.Linear(k, k * heads, bias=False)
        self.tovalues = nn.Linear(k, k * heads, bias=False)
        self.unifyheads = nn.Linear(heads * k, k)

    def forward(self, x):
        b, t, k = x.size()
        h = self.heads
        queries = self.toqueries(x).view(b, t, h, k)
        keys = self.tokeys(x).view(b, t, h, k)
        values = self.tovalues(x).view(b, t, h, k)
        keys = keys.transpose(1, 2).contiguous().view(b * h, t, k)
        queries = queries.transpose(1, 2).contiguous().view(b * h, t, k)
        values = values.transpose(1, 2).contiguous().view(b * h, t, k)
        queries = queries / (k ** (1 / 4))
        keys = keys / (k ** (1 / 4))
        dot = torch.bmm(queries, keys.transpose(1, 2))
        dot = F.softmax(dot, dim=2)
        out = torch.bmm(dot, values).view(b, h, t, k)
        out = out.transpose(1, 2).contiguous().view(b, t, h * k)
        return self.unifyheads(out)
