"""A model of images whose first layer scales each sample by a level from a table sized by an
argument nothing names; the model's forward fails on vectors. Checked in its model with vectors
guessed for the model, the layer would get what the model never gives it."""

import torch
import torch.nn as nn


class LevelScale(nn.Module):
    def __init__(self, levels):
        super().__init__()
        self.table = nn.Parameter(torch.linspace(0.1, 1.0, levels))

    def forward(self, x, level):
        return x * self.table[level].view(-1, 1, 1, 1)


class ImageModel(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = LevelScale(10)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        level = torch.zeros(x.shape[0], dtype=torch.long)
        return self.conv(self.scale(x, level))
