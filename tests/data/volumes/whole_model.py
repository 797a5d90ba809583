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
