"""A block that takes a feature map (B, C, H, W) of the resolution it is built for, given as a
pair of ints its constructor annotates."""

import math
from typing import Tuple

import torch
import torch.nn as nn


class GridBlock(nn.Module):
    def __init__(self, in_channels: int, input_resolution: Tuple[int, int], number_of_heads: int):
        super().__init__()
        self.input_resolution: Tuple[int, int] = input_resolution
        self.side = min(self.input_resolution)
        self.norm = nn.LayerNorm(in_channels)
        self.attn = nn.MultiheadAttention(in_channels, number_of_heads, batch_first=True)
        self.pos = nn.Parameter(torch.zeros(1, math.prod(input_resolution), in_channels))

    def forward(self, input):
        batch, channels, height, width = input.shape
        tokens = input.flatten(2).transpose(1, 2) + self.pos
        tokens = self.norm(tokens)
        out, _ = self.attn(tokens, tokens, tokens, need_weights=False)
        return input + out.transpose(1, 2).reshape(batch, channels, height, width)
