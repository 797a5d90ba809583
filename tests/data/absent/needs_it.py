"""A file whose own top level asks the missing package a question: it cannot be imported."""

import torch.nn as nn

import st_absent_layers

if st_absent_layers.version() > 2:
    Norm = nn.LayerNorm
else:
    Norm = nn.Identity


class Mlp(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)
