"""A main block that fails before it calls the module: the module is still checked, from
guesses, with a note."""

import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return x + self.proj(x)


if __name__ == "__main__":
    weights = torch.load("checkpoint_that_is_not_there.pt")
    Residual(16)(torch.randn(2, 3, 16))
