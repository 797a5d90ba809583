"""A constructor argument of any name that says where tensors live (``.to(DEVICE)`` in the
constructor, ``device=self.place`` in forward) is read as the CPU, by use, with a note."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace.drive.usage import DEVICE, meaning_by_use


class NodeAttention(nn.Module):
    """Attention over a graph's nodes with a learned bias per pair, moved where DEVICE says."""

    def __init__(self, DEVICE, in_channels, num_nodes):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(num_nodes, num_nodes).to(DEVICE))
        self.proj = nn.Linear(in_channels, in_channels)

    def forward(self, x):
        scores = torch.einsum("bnc,bmc->bnm", x, self.proj(x)) / x.shape[-1] ** 0.5 + self.bias
        return F.softmax(scores, dim=-1) @ x


class Positions(nn.Module):
    """Positions made in forward on the device the constructor was given."""

    def __init__(self, dim, place):
        super().__init__()
        self.place = place
        self.table = nn.Embedding(64, dim)

    def forward(self, x):
        return x + self.table(torch.arange(x.shape[1], device=self.place))


def test_a_device_is_read_by_use():
    assert meaning_by_use(NodeAttention, "DEVICE") == DEVICE
    assert meaning_by_use(Positions, "place") == DEVICE
    assert meaning_by_use(Positions, "dim") != DEVICE


def test_modules_told_their_device_are_checked_on_the_cpu():
    for cls, name in ((NodeAttention, "DEVICE"), (Positions, "place")):
        result = st.check(cls).targets[0]
        assert result.error is None, result.error
        assert any(note.startswith(f"{name}='cpu'") for note in result.notes), result.notes
