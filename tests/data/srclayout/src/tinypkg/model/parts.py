"""The sibling module a block imports by the package's absolute name."""

import torch


def gated(h):
    value, gate = h.chunk(2, dim=-1)
    return value * torch.sigmoid(gate)
