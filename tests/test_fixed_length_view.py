"""A module built for sequences of one length (``seq_len``, a constructor argument) that its
views spell out (``view(-1, heads, self.seq_len, d)``) runs at that length, with a note, and is
checked there: heads split without a transpose are still a jumble."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class FixedLengthHeads(nn.Module):
    def __init__(self, d_model, n_heads, seq_len):
        super().__init__()
        self.heads, self.seq_len, self.head = n_heads, seq_len, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def split(self, t):
        return t.view(-1, self.seq_len, self.heads, self.head).transpose(1, 2)

    def forward(self, x):
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(-2, -1) / self.head ** 0.5, dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(-1, self.seq_len, self.heads * self.head))


class FixedLengthJumble(FixedLengthHeads):
    def split(self, t):
        return t.reshape(-1, self.heads, self.seq_len, self.head)  # no transpose: tokens jumbled


def test_a_module_built_for_one_length_runs_at_it():
    result = st.check(FixedLengthHeads).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("T=") and "the length the module was built for" in n for n in result.notes), \
        result.notes
    assert result.dims["T"] == st.Dims()["L"]


def test_a_jumble_at_that_length_is_found():
    result = st.check(FixedLengthJumble).targets[0]
    assert result.error is None, result.error
    jumbled = [d for d in result.diagnostics if d.rule == "reshape-jumble"]
    assert jumbled and FixedLengthJumble.split.__code__.co_firstlineno + 1 in jumbled[0].lines, result.diagnostics
