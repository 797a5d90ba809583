"""A mixer with one scale per head, as a list: no name says how many."""

import torch
from torch import nn


class ScaledHeads(nn.Module):
    def __init__(self, width, scales: list):
        super().__init__()
        self.scales = torch.tensor(scales)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, n, c = x.shape
        heads = self.proj(x).view(b, n, len(self.scales), c // len(self.scales))
        return (heads * self.scales[:, None]).reshape(b, n, c)
