"""A constructor that hands its sizes to its base class, which stores them; the subclass reads
them back as ``self.fw`` and ``self.repeats``: no name says what they are, their use does."""

from torch import nn


class Stored(nn.Module):
    def __init__(self, fw, repeats):
        super().__init__()
        self.fw = fw
        self.repeats = repeats


class Mixer(Stored):
    def __init__(self, fw, repeats):
        super().__init__(fw, repeats)
        self.layers = nn.ModuleList([nn.Linear(self.fw, self.fw) for _ in range(self.repeats)])
        self.norm = nn.LayerNorm(self.fw)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(self.norm(x))
        return x
