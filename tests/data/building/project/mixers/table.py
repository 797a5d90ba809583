"""A module whose sequence length is a constructor default: only the project's example says
which argument it is."""

import torch
import torch.nn as nn


class TableMixing(nn.Module):
    def __init__(self, d_model, span=36):
        super().__init__()
        self.table = nn.Parameter(torch.eye(span))
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(torch.softmax(self.table, dim=-1) @ x)
