"""A (B, 1) prediction minus a (B,) target broadcasts to (B, B): the loss is finite and wrong."""

import torch.nn as nn


class Regressor(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.head = nn.Linear(n_embd, 1)

    def forward(self, x, target):
        pred = self.head(x.mean(dim=1))
        loss = ((pred - target) ** 2).mean()
        return loss
