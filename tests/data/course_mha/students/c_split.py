import math

import torch
import torch.nn as nn
import torch.nn.functional as F

class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d_k = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.h, self.d_k).permute(0, 2, 1, 3)

    def forward(self, query, key, value, attn_mask=None):
        b, t, c = query.shape
        q = self.split(self.q_proj(query))
        k = self.split(self.k_proj(key))
        v = self.split(self.v_proj(value))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d_k)
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask.bool(), -1e9)
        p = F.softmax(scores, dim=-1)
        p = self.dropout(p)
        out = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, t, c)
        return self.out_proj(out)
