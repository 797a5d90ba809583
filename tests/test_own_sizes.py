"""A size the module is built with that equals a probe size: a per-channel scale over the 7 series
a forecaster's default fixes, beside the probe length 7. The failure where the guessed width
meets it cannot say which of the two it met; the probe length is moved off the module's own
size, and the failure is then read for what it is (the width the code fixes, a guess of
shapetrace's, not a bug), while a real clash of length and width stays the code's."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.base.dims import Dims
from shapetrace.drive.own_sizes import own_sizes
from shapetrace.drive.plan import Request, make_plan


class SeriesScale(nn.Module):
    """Scales each of its series by a weight of its own, then mixes them: (B, T, n_series)."""

    def __init__(self, n_series: int = 7, hidden: int = 32, kernel: int = 3):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n_series))
        self.bias = nn.Parameter(torch.zeros(n_series))
        self.mix = nn.Linear(n_series, hidden)

    def forward(self, x):
        return self.mix(x * self.weight + self.bias)


class LengthTimesWidth(nn.Module):
    """Built with a constant 7 (a kernel), and a real bug: the scores of the features are added
    to the scores of the positions, a (T, T) and a (C, C) table that never broadcast."""

    def __init__(self, d_model, n_heads, kernel: int = 7):
        super().__init__()
        self.heads, self.kernel = n_heads, kernel
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) + q.transpose(-2, -1) @ k
        return torch.softmax(scores / q.size(-1) ** 0.5, dim=-1) @ v


def test_the_modules_own_sizes_are_those_no_probe_size_makes():
    plan = make_plan(Request(SeriesScale, Dims(), "SeriesScale"))
    assert own_sizes(plan) == {7, 32, 3}
    plan = make_plan(Request(LengthTimesWidth, Dims(), "LengthTimesWidth"))
    assert own_sizes(plan) == {7}  # d_model and n_heads are the probe sizes'


def test_a_width_met_at_a_size_of_the_modules_own_is_the_guesses_not_a_bug():
    result = st.check(SeriesScale).targets[0]
    assert not [d for d in result.diagnostics if d.rule == "op-failed"], result.diagnostics
    assert result.error is None or "depends on the guess" in result.error, result.error
    if result.error is None:  # read at the width the code fixes, and checked
        assert result.dims["T"] != 7, result.dims
        assert any(n.startswith("C=7, the width the module's own code fixes") for n in result.notes), \
            result.notes


def test_a_real_clash_of_length_and_width_stays_the_codes():
    result = st.check(LengthTimesWidth).targets[0]
    assert result.error is None, result.error
    assert [d for d in result.diagnostics if d.rule == "op-failed"], result.diagnostics
