"""A head size the code fixes (``head_dim = 64; heads = width // head_dim``, as diffusion code
counts its heads) does not divide the probe width: the view into heads fails on correct code.
The width is made whole heads of that size, with a note, and the module is checked; a module
whose heads the probe sizes fit keeps them."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.base.dims import Dims


class FixedHeadAttention(nn.Module):
    def __init__(self, inner_dim):
        super().__init__()
        self.head_dim = 64
        self.heads = inner_dim // self.head_dim
        self.to_qkv = nn.Linear(inner_dim, 3 * inner_dim, bias=False)
        self.to_out = nn.Linear(inner_dim, inner_dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (y.reshape(b, t, self.heads, self.head_dim).transpose(1, 2) for y in (q, k, v))
        w = torch.softmax(q @ k.transpose(-2, -1) * self.head_dim ** -0.5, dim=-1)
        return self.to_out((w @ v).transpose(1, 2).reshape(b, t, c))


class CountedHeads(FixedHeadAttention):
    """The same attention with its heads given: the probe sizes fit."""

    def __init__(self, inner_dim, n_head):
        super().__init__(inner_dim)
        self.heads, self.head_dim = n_head, inner_dim // n_head


def test_a_head_size_the_code_fixes_gets_a_width_of_whole_heads():
    result = st.check(FixedHeadAttention).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("whole heads of the head size the code fixes (64" in n for n in result.notes), \
        result.notes
    assert result.dims["C"] % 64 == 0 and result.dims["C"] // 64 == result.dims["H"]


def test_heads_the_probe_sizes_fit_are_kept():
    result = st.check(CountedHeads).targets[0]
    assert result.error is None, result.error
    assert not any("the code fixes" in n for n in result.notes), result.notes
    assert result.dims["C"] == Dims()["C"]
