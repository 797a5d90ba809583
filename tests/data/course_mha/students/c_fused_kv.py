import math

import torch
import torch.nn as nn
import torch.nn.functional as F

class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.embed_dim = embed_dim
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.kv_proj = nn.Linear(embed_dim, 2 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, attn_mask=None):
        B, T, C = query.shape
        S = key.shape[1]
        H, d = self.num_heads, C // self.num_heads
        q = self.q_proj(query).view(B, T, H, d).transpose(1, 2)
        k_w, v_w = self.kv_proj.weight.chunk(2, dim=0)
        k_b, v_b = self.kv_proj.bias.chunk(2, dim=0)
        k = F.linear(key, k_w, k_b).view(B, S, H, d).transpose(1, 2)
        v = F.linear(value, v_w, v_b).view(B, S, H, d).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        weights = self.dropout(scores.softmax(-1))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, C))
