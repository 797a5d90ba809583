"""Constructors whose defaults fix sizes shapetrace would otherwise choose: a table of positions
built once as a default argument at the default width (so the module runs only at that width),
and a recurrent decoder whose input width is its own default."""

import math

import torch
import torch.nn as nn


class PositionTable(nn.Module):
    def __init__(self, width, longest=256):
        super().__init__()
        angles = torch.arange(longest)[:, None] / 10000 ** (torch.arange(0, width, 2) / width)
        table = torch.zeros(longest, width)
        table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
        self.register_buffer("table", table)

    def forward(self, length):
        return self.table[:length]


class PlacedAttention(nn.Module):
    """Self-attention whose keys see projected positions, halves of the width per head pair."""

    def __init__(self, d_model=144, num_heads=4, dropout=0.1, positional_encoder=PositionTable(144)):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads, self.d_head = num_heads, d_model // num_heads
        self.positional_encoder = positional_encoder
        self.norm = nn.LayerNorm(d_model)
        self.W_pos = nn.Linear(d_model, d_model, bias=False)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        batch_size, seq_length, width = x.size()
        x = self.norm(x)
        pos = self.positional_encoder(seq_length).repeat(batch_size, 1, 1)
        pos = self.W_pos(pos).view(batch_size, -1, self.num_heads, self.d_head).transpose(1, 2)
        q, k, v = (t.view(batch_size, seq_length, self.num_heads, self.d_head).transpose(1, 2)
                   for t in self.qkv(x).split(width, -1))
        w = ((q @ (k + pos).transpose(-2, -1)) / math.sqrt(self.d_head)).softmax(-1)
        y = (self.dropout(w) @ v).transpose(1, 2).reshape(batch_size, seq_length, width)
        return self.out(y)


class RecurrentHead(nn.Module):
    """An LSTM over an encoder's output, then class scores."""

    def __init__(self, d_encoder=144, d_decoder=40, num_classes=29):
        super().__init__()
        self.lstm = nn.LSTM(input_size=d_encoder, hidden_size=d_decoder, batch_first=True)
        self.linear = nn.Linear(d_decoder, num_classes)

    def forward(self, x):
        x, _ = self.lstm(x)
        return self.linear(x)


class GridAngles(nn.Module):
    """Angles over a grid of h by w positions: h and w are numbers (steps), not tensors."""

    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scales", torch.linspace(1.0, 4.0, dim // 4))

    def forward(self, h, w):
        rows = torch.linspace(-1.0, 1.0, steps=h)[:, None] * self.scales
        cols = torch.linspace(-1.0, 1.0, steps=w)[:, None] * self.scales
        return torch.cat((rows[:, None].expand(h, w, -1), cols[None].expand(h, w, -1)), dim=-1)
