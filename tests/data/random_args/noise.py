"""Randomness in eval that is and is not a bug by what it draws: Gaussian noise per sample
(a noise injection of a generative decoder, random in eval by design), the same noise drawn only
while training, and a projection whose weights are drawn anew in every forward."""

import torch
from torch import nn


class NoiseInjection(nn.Module):
    """Adds noise scaled by a learned projection, in training and in eval."""

    def __init__(self, channels: int):
        super().__init__()
        self.scale = nn.Conv1d(channels, channels, kernel_size=1, bias=False)

    def forward(self, x):
        b, _, t = x.shape
        noise = torch.randn((b, 1, t), dtype=x.dtype)
        return x + noise * self.scale(x)


class NoiseWhenTraining(NoiseInjection):
    def forward(self, x):
        if not self.training:
            return x
        return super().forward(x)


class WeightsDrawnInForward(nn.Module):
    """Draws its mixing matrix in forward: a different function on every call."""

    def __init__(self, channels: int):
        super().__init__()
        self.channels = channels
        self.out = nn.Linear(channels, channels)

    def forward(self, x):
        mixing = torch.randn(self.channels, self.channels) / self.channels ** 0.5
        return self.out(x @ mixing)
