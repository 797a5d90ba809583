"""A layer built by its parent with its heads left at the layer's own default
(``SplitHeads(width)`` with ``def __init__(self, width, heads=4)``) splits the width into 4
heads: a probe width 4 does not divide fails the view on correct code. The default tells the
count (kept, ``self.heads``) from the head size the width made, so the probe has 4 heads, with a
note, and the module is checked: a jumbled split in the same layout is still found."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class SplitHeads(nn.Module):
    def __init__(self, width, heads=4):
        super().__init__()
        self.heads = heads
        self.per_head = width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def split(self, t, b, n):
        return t.view(b, n, self.heads, self.per_head).transpose(1, 2)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = (self.split(t, b, n) for t in self.qkv(x).chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(-2, -1) / self.per_head ** 0.5, dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(b, n, c))


class JumbledSplit(SplitHeads):
    """Splits into heads straight from (b, n, c): tokens jumbled across heads."""

    def split(self, t, b, n):
        return t.reshape(b, self.heads, n, self.per_head)


class Stack(nn.Module):
    def __init__(self, hidden, layers=2):
        super().__init__()
        self.blocks = nn.ModuleList(SplitHeads(hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(self.norm(x))
        return x


class JumbledStack(Stack):
    def __init__(self, hidden, layers=2):
        super().__init__(hidden, layers)
        self.blocks = nn.ModuleList(JumbledSplit(hidden) for _ in range(layers))


def test_heads_a_layer_keeps_at_its_default_set_the_probe_heads():
    result = st.check(Stack).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert result.dims["H"] == 4 and result.dims["C"] % 4 == 0, result.dims
    assert any("constructor's default (heads=4)" in n for n in result.notes), result.notes


def test_a_jumbled_split_at_those_heads_is_still_found():
    result = st.check(JumbledStack).targets[0]
    assert result.error is None, result.error
    jumbled = [d for d in result.diagnostics if d.rule == "reshape-jumble"]
    assert jumbled and jumbled[0].line == JumbledSplit.split.__code__.co_firstlineno + 1, result.diagnostics


def test_a_layer_checked_alone_keeps_the_probe_heads():
    """Checked alone, the heads are a constructor argument: the probe sizes fit them."""
    result = st.check(SplitHeads).targets[0]
    assert result.error is None, result.error
    assert result.dims["H"] == st.Dims()["H"], result.dims
    assert not any("default (heads" in n for n in result.notes), result.notes
