"""Two classes: the main block calls the first; only the project's test calls the second."""

import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, factors: list):
        super().__init__()
        self.factors = nn.Parameter(torch.tensor(factors))

    def forward(self, x):
        return x * self.factors


class ScaleStack(nn.Module):
    def __init__(self, layers: list):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


if __name__ == "__main__":
    print(Scale([1.0, 2.0, 3.0])(torch.randn(2, 4, 3)).shape)
