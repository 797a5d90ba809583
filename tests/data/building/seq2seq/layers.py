"""A layer whose mask only its model knows how to make (a package of our own: layers here, the
model that builds them in model.py)."""

import math

import torch.nn as nn


class MaskedSelfAttention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, pad_mask):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(pad_mask == 0, float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class MaskedLayer(nn.Module):
    def __init__(self, d_model, n_head, layer_number):
        super().__init__()
        self.layer_number = layer_number
        self.norm = nn.LayerNorm(d_model)
        self.attn = MaskedSelfAttention(d_model, n_head)

    def forward(self, x, pad_mask):
        return x + self.attn(self.norm(x), pad_mask)
