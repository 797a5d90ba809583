"""A constructor whose own check refuses a width its fixed head count does not divide
(``self.head = 2`` then ``if d_model % self.head: raise Exception("... not divisible ...")``):
the count is read from the module being built, the width made divisible by it, and the module
checked at those sizes (before, only counts among the constructor's locals were read)."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st


class PairedHeads(nn.Module):
    def __init__(self, d_model, axis=-1):
        super().__init__()
        self.head, self.axis = 2, axis
        if d_model % self.head != 0:
            raise Exception("Hidden size is not divisible by the number of attention heads")
        self.head_size = d_model // self.head
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.head, self.head_size).permute(2, 0, 3, 1, 4)
        w = (q @ k.transpose(-2, -1) / self.head_size ** 0.5).softmax(self.axis)
        return (w @ v).transpose(1, 2).reshape(b, t, c)


def test_the_width_is_made_divisible_by_the_count_kept_on_the_module():
    result = st.check(PairedHeads).targets[0]
    assert result.error is None, result.error
    assert result.dims["C"] % 2 == 0
    assert any("the constructor needs an even width" in n for n in result.notes)
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []


def test_a_bug_is_found_at_the_width_read_so():
    result = st.check(PairedHeads, init={"d_model": "C", "axis": 2}).targets[0]
    assert result.error is None, result.error
    assert "softmax-axis" in [d.rule for d in result.diagnostics if d.severity == "error"]
