import math

import torch
import torch.nn as nn
import torch.nn.functional as F

class Head(nn.Module):
    def __init__(self, embed_dim, head_dim):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim)
        self.k = nn.Linear(embed_dim, head_dim)
        self.v = nn.Linear(embed_dim, head_dim)

    def forward(self, query, key, value, attn_mask=None):
        q, k, v = self.q(query), self.k(key), self.v(value)
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.heads = nn.ModuleList([Head(embed_dim, embed_dim // num_heads)] * num_heads)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, attn_mask=None):
        out = torch.cat([h(query, key, value, attn_mask) for h in self.heads], dim=-1)
        return self.dropout(self.out_proj(out))
