"""Sequence-first code: nn.MultiheadAttention without batch_first, fed (T, B, C) by its main
block. Correct; a batch-first guess would misread its axes."""

import torch
from torch import nn


class SequenceFirstBlock(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        mixed, _ = self.attn(x, x, x, need_weights=False)
        return self.norm(x + mixed)


if __name__ == "__main__":
    block = SequenceFirstBlock(d_model=32, nhead=4)
    print(block(torch.randn(10, 3, 32)).shape)
