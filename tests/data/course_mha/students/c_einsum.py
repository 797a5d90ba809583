import math

import torch
import torch.nn as nn
import torch.nn.functional as F

class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, query, key, value, attn_mask=None):
        B, T, C = query.shape
        S = key.shape[1]
        H = self.num_heads
        q = self.q_proj(query).reshape(B, T, H, C // H)
        k = self.k_proj(key).reshape(B, S, H, C // H)
        v = self.v_proj(value).reshape(B, S, H, C // H)
        scores = torch.einsum("bthd,bshd->bhts", q, k) * (C // H) ** -0.5
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, float("-inf"))
        attn = self.drop(scores.softmax(dim=-1))
        out = torch.einsum("bhts,bshd->bthd", attn, v).reshape(B, T, C)
        return self.out_proj(out)
