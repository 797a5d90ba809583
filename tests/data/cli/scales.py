"""Attention scaled by a tensor rather than a Python number: the scale is a one-element tensor."""

import torch
import torch.nn as nn
from torch.nn import functional as F


class TensorScale(nn.Module):
    def __init__(self, n_embd, head_size):
        super().__init__()
        self.query = nn.Linear(n_embd, head_size)
        self.key = nn.Linear(n_embd, head_size)
        self.value = nn.Linear(n_embd, head_size)
        self.head_size = head_size

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(self.head_size, dtype=torch.float32))
        return F.softmax(scores, dim=-1) @ v


class WidthScale(TensorScale):
    """Scaled by sqrt(C), the model width, instead of sqrt(head_size)."""

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(x.shape[-1], dtype=torch.float32))
        return F.softmax(scores, dim=-1) @ v
