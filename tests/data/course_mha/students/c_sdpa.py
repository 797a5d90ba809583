import math

import torch
import torch.nn as nn
import torch.nn.functional as F

class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.p = dropout
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, attn_mask=None):
        B, T, C = query.shape
        S = key.shape[1]
        H = self.num_heads
        q = self.q_proj(query).view(B, T, H, -1).transpose(1, 2)
        k = self.k_proj(key).view(B, S, H, -1).transpose(1, 2)
        v = self.v_proj(value).view(B, S, H, -1).transpose(1, 2)
        mask = attn_mask.bool() if attn_mask is not None else None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.p if self.training else 0.0)
        return self.out_proj(out.transpose(1, 2).reshape(B, T, C))
