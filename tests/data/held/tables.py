"""Position tables a constructor computes: one divides 0 by 0 in its first column (a size
shadowed by an index tensor), one fills a mask with -inf on purpose."""

import math

import torch
from torch import nn


class ShadowedTable(nn.Module):
    def __init__(self, max_len: int = 16, dim: int = 8):
        super().__init__()
        pos = torch.arange(0.0, max_len).unsqueeze(1).repeat(1, dim)
        dim = torch.arange(0.0, dim).unsqueeze(0).repeat(max_len, 1)
        div = torch.exp(-math.log(10000) * (2 * (dim // 2) / dim))
        angles = pos * div
        self.register_buffer("pe", torch.where(dim % 2 == 0, angles.sin(), angles.cos()))

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class MaskedTable(nn.Module):
    def __init__(self, max_len: int = 16, dim: int = 8):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        freq = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)
        self.register_buffer("pe", pe)
        self.register_buffer("future", torch.full((max_len, max_len), float("-inf")).triu(1))

    def forward(self, x):
        t = x.size(1)
        x = x + self.pe[:t]
        weights = (x @ x.transpose(-2, -1) + self.future[:t, :t]).softmax(dim=-1)
        return weights @ x
