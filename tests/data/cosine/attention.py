"""Scaled cosine attention, as windowed vision transformers compute it: the scores q . k are
divided by the all-pairs table of their norms, |q| |k|^T, floored at a small epsilon."""

import torch
import torch.nn as nn


class CosineAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.tau = nn.Parameter(torch.ones(1, num_heads, 1, 1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / torch.maximum(
            torch.norm(q, dim=-1, keepdim=True) * torch.norm(k, dim=-1, keepdim=True).transpose(-2, -1),
            torch.tensor(1e-6))
        weights = (scores / self.tau.clamp(min=0.01)).softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(B, T, C))


class NormsOnly(nn.Module):
    """Weights from the norms' all-pairs table alone, no product of q and k to scale: the table
    is what the softmax reads (the case the warning is for)."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        table = torch.norm(q, dim=-1, keepdim=True) * torch.norm(k, dim=-1, keepdim=True).transpose(-2, -1)
        weights = table.softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(B, T, C))
