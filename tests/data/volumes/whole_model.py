"""A head built on a whole model that takes no sizes: built as it is, it would not fit this
machine's checks."""

import torch
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(30000, 8192))  # 245M parameters

    def forward(self, ids):
        return self.table[ids]


class Head(nn.Module):
    def __init__(self, backbone: Backbone, classes: int = 3):
        super().__init__()
        self.backbone = backbone
        self.classify = nn.Linear(self.backbone.table.shape[1], classes)

    def forward(self, ids):
        return self.classify(self.backbone(ids))


class ReadsAValue(nn.Module):
    """Reads a value while it is built (the meta device has none to give), then stacks forty
    layers of 4M parameters each whatever its width."""

    def __init__(self, dim):
        super().__init__()
        self.gain = float(torch.ones(1).item())
        self.layers = nn.ModuleList(nn.Linear(2048, 2048) for _ in range(40))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * self.gain
