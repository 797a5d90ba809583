"""Softmax over the wrong axis: dim=1 of (B, n_head, T, T) normalises over the heads."""

import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    """Bidirectional (encoder) attention: every token sees every other token."""

    def __init__(self, n_embd, n_head, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        wei = q @ k.transpose(-2, -1) * hs**-0.5
        wei = self.dropout(F.softmax(wei, dim=1))
        out = (wei @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(out)
