"""Attention whose scores are never scaled: one made the factor and left it out, one folds it
into its weights on purpose, one made it and applies it."""

import torch
from torch import nn


class ForgottenScale(nn.Module):
    """Computes 1/sqrt(dim_head) in its constructor and never multiplies the scores by it."""

    def __init__(self, dim, heads=4, dim_head=8):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.to_qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1)
        out = scores.softmax(dim=-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(b, t, -1))


class FoldedScale(nn.Module):
    """Unscaled on purpose (the scale folded into the query weights, as T5 does)."""

    def __init__(self, dim, heads=4, dim_head=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.to_qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        out = (q @ k.transpose(-2, -1)).softmax(dim=-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(b, t, -1))


class ScaleByName(nn.Module):
    """Makes the factor and applies it to the queries, reading it by name."""

    def __init__(self, dim, heads=4, dim_head=8):
        super().__init__()
        self.heads, self.scale = heads, dim_head ** -0.5
        self.q = nn.Linear(dim, heads * dim_head)
        self.kv = nn.Linear(dim, 2 * heads * dim_head)
        self.out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, -1).transpose(1, 2) * getattr(self, "scale")
        k, v = self.kv(x).view(b, t, 2, self.heads, -1).permute(2, 0, 3, 1, 4)
        weights = torch.einsum("bhid,bhjd->bhij", q, k).softmax(dim=-1)
        return self.out(torch.einsum("bhij,bhjd->bhid", weights, v).transpose(1, 2).reshape(b, t, -1))
