"""A model of images whose first layer scales each sample by a level from a table sized by an
argument nothing names; the model's forward fails on vectors. Checked in its model with vectors
guessed for the model, the layer would get what the model never gives it. And a model of
sequences whose forward fails after its scaling layer ran, on a head nothing set: a failure that
says nothing of the shapes, so the layer is checked as it fed it."""

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


class SequenceScale(nn.Module):
    def __init__(self, levels):
        super().__init__()
        self.table = nn.Parameter(torch.linspace(0.1, 1.0, levels))

    def forward(self, x, level):
        return x * self.table[level].view(-1, 1, 1)


class UnfinishedModel(nn.Module):
    """Scales its sequence, then calls a head nothing has set yet: its failure is no misfit of
    the shapes it was given, and what it handed the scaling holds."""

    def __init__(self, width):
        super().__init__()
        self.scale = SequenceScale(10)
        self.norm = nn.LayerNorm(width)
        self.head = None

    def forward(self, x):
        level = torch.zeros(x.shape[0], dtype=torch.long)
        return self.head(self.norm(self.scale(x, level)))
