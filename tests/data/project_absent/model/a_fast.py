"""A variant the project builds with a GPU kernel, in one place."""

import torch.nn as nn

from layers.family import FusedAttention, HeadsLayer


class FastNet(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.layer = HeadsLayer(FusedAttention(), d_model, n_heads)

    def forward(self, x):
        return self.layer(x, None)
