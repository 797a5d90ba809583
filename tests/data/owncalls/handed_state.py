"""A layer set up with keys by its caller, handed whole to a wrapper that sets it up again in
its own forward. Checking the wrapper re-made at the probe sizes must leave the layer its code
built as that code left it: the layer's own call is replayed next, with its own keys."""

import math

import torch
from torch import nn


class KeyWrapper(nn.Module):
    def __init__(self, layer, dim):
        super().__init__()
        self.layer = layer
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        self.layer.init_keys(x)
        return self.out(self.layer(x))


class KeyedLayer(nn.Module):
    """Attention over keys set up beforehand, at any width: nothing re-makes it at other sizes."""

    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(()))

    def init_keys(self, keys):
        self.proj_keys = keys * self.gain

    def forward(self, probe):
        w = torch.softmax(probe @ self.proj_keys.transpose(1, 2) / math.sqrt(probe.shape[-1]), dim=-1)
        return w @ self.proj_keys


if __name__ == "__main__":
    layer = KeyedLayer()
    layer.init_keys(torch.randn(4, 6, 8))
    layer(torch.randn(4, 3, 8))
    model = KeyWrapper(layer, dim=8)
    model(torch.randn(4, 6, 8))
