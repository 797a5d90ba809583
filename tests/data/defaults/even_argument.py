"""A model handed a positional encoding that fills its features in pairs (sines in the even
columns, cosines in the odd ones): built at an odd width, that argument refuses it."""

import math

import torch
from torch import nn


class PairedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).float().unsqueeze(1)
        speed = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * speed)
        pe[:, 1::2] = torch.cos(position * speed)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class PositionedMixer(nn.Module):
    def __init__(self, positions, d_model):
        super().__init__()
        self.positions = positions
        self.mix = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.mix(self.positions(x))


def build(d_model=32, max_len=100):
    return PositionedMixer(PairedPositions(max_len, d_model), d_model)
