import torch
from torch import nn


class ShiftMix(nn.Module):
    """Needs a table of shifts only its tests say how to make."""

    def __init__(self, shifts: torch.Tensor, width: int):
        super().__init__()
        self.register_buffer("shifts", shifts)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x) + x.roll(int(self.shifts[0]), dims=1)
