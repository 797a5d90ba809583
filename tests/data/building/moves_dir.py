"""A forward that changes the working directory, as a data loader's helper may."""

import os
import tempfile

import torch.nn as nn


class WandersOff(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        os.chdir(tempfile.gettempdir())
        out, _ = self.attn(x, x, x, need_weights=False)
        return out.transpose(0, 1).reshape(x.shape)  # BUG: (T, B, C) read back as (B, T, C)
