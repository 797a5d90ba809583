"""A loss that broadcasts (B, 1) against (B,): a warning, not an error."""

import torch.nn as nn


class BroadcastLoss(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.head = nn.Linear(n_embd, 1)

    def forward(self, x):
        pred = self.head(x[:, -1])  # (B, 1)
        target = x[:, -1, 0]  # (B,)
        return ((pred - target) ** 2).mean()
