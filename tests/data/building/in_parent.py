"""A model whose parts only make sense inside it: a block numbered by its layer, an attention fed
rotation angles and a mask its model makes."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def angles(head_size, length):
    inv = 1.0 / (10000 ** (torch.arange(0, head_size, 2).float() / head_size))
    return torch.outer(torch.arange(length).float(), inv)


def rotate(t, theta):
    pairs = t.float().reshape(*t.shape[:-1], -1, 2)
    cos, sin = theta.cos()[None, :, None, :], theta.sin()[None, :, None, :]
    first, second = pairs[..., 0], pairs[..., 1]
    return torch.stack((first * cos - second * sin, first * sin + second * cos), -1).flatten(-2)


class RotaryAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.wq, self.wk, self.wv = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, theta, mask):
        B, T, C = x.shape
        q, k, v = (w(x).view(B, T, self.n_heads, -1) for w in (self.wq, self.wk, self.wv))
        q, k = rotate(q, theta), rotate(k, theta)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


class RotaryAttentionLeaky(RotaryAttention):
    def forward(self, x, theta, mask):
        B, T, C = x.shape
        q, k, v = (w(x).view(B, T, self.n_heads, -1) for w in (self.wq, self.wk, self.wv))
        q, k = rotate(q, theta), rotate(k, theta)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
        scores.masked_fill(~mask, float("-inf"))  # BUG: the result is dropped
        y = scores.softmax(-1) @ v
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


class NumberedBlock(nn.Module):
    def __init__(self, layer_index, dim, n_heads, leaky=False):
        super().__init__()
        self.layer_index = layer_index
        self.norm = nn.LayerNorm(dim)
        self.attn = (RotaryAttentionLeaky if leaky else RotaryAttention)(dim, n_heads)

    def forward(self, x, theta, mask):
        return x + self.attn(self.norm(x), theta, mask)


class RotaryModel(nn.Module):
    def __init__(self, vocab_size, dim, n_heads, n_layers=2, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList(NumberedBlock(i, dim, n_heads) for i in range(n_layers))
        self.register_buffer("theta", angles(dim // n_heads, max_len), persistent=False)

    def forward(self, idx):
        T = idx.size(1)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, self.theta[:T], mask)
        return x


class LeakyModel(RotaryModel):
    def __init__(self, vocab_size, dim, n_heads, max_len=64):
        super().__init__(vocab_size, dim, n_heads, 1, max_len)
        self.blocks = nn.ModuleList([NumberedBlock(0, dim, n_heads, leaky=True)])
