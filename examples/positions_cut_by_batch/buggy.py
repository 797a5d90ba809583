"""A time-first position table cut by the batch: self.pe[: x.size(0)] on (B, T, C) input."""

import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    """Adds fixed sinusoidal positions to batch-first (B, T, C) embeddings."""

    def __init__(self, n_embd, block_size):
        super().__init__()
        position = torch.arange(block_size).unsqueeze(1)
        rate = torch.exp(torch.arange(0, n_embd, 2) * (-math.log(10000.0) / n_embd))
        pe = torch.zeros(block_size, 1, n_embd)  # (block_size, 1, C): time first
        pe[:, 0, 0::2] = torch.sin(position * rate)
        pe[:, 0, 1::2] = torch.cos(position * rate[: n_embd // 2])
        self.register_buffer("pe", pe)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        x = x + self.pe[: x.size(0)]
        return self.proj(x)
