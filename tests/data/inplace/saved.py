"""A norm that divides its input by its own root mean square in place: the forward runs, but
autograd cannot differentiate it (the division wrote into a tensor the mean's backward needs).
The input mutation is the bug the rules report; the behaviour checks still run, by changing
one row at a time."""

import torch
import torch.nn as nn


class DividedInPlace(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()
        x /= norm
        return x * self.weight


class DividedByTheBatch(DividedInPlace):
    """The same, with the mean taken over the batch too: samples mix."""

    def forward(self, x):
        norm = x.pow(2).mean((0, -1), keepdim=True).add(1e-6).sqrt()
        x /= norm
        return x * self.weight
