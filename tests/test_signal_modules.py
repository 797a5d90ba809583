"""Speech-style modules built and called from their own code with nothing declared: signals
(B, C, T) read channels first where a 1-D convolution refuses (B, T, C) or a norm is handed the
input with its axis 1 moved last, a float 0/1 mask multiplied into the values given their shape
with the channels 1 (``x * x_mask``: (B, 1, T)), sizes read from forward's own calls
(``F.layer_norm(x, (self.channels,))``), a subclass's inherited constructor, and a mask's
outer product with itself left alone. Every correct one is checked and clean; the wrong one is
found at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.base.dims import Dims
from shapetrace.base.specs import make_input, parse_input
from shapetrace.drive.infer import infer_inputs
import resolved

DATA = Path(__file__).parent / "data" / "signals"


def _check(cls: str):
    target = resolved.target(DATA / "signals.py", cls)
    return target, st.check(target.cls, target=target.display)


@pytest.mark.parametrize("cls", ["ChannelNorm", "ConvFeedForward", "ConvSelfAttention", "SignalEncoder"])
def test_a_signal_module_is_checked_with_nothing_declared(cls):
    _, report = _check(cls)
    result = report.targets[0]
    assert result.error is None, result.error
    assert not report.diagnostics, [(d.rule, d.line, d.message) for d in report.diagnostics]
    assert any("channels first" in n for n in result.notes), result.notes


def test_the_multiplied_mask_follows_the_values_channels_first():
    target, report = _check("ConvFeedForward")
    specs = infer_inputs(target.cls, Dims())
    assert [str(s) for s in specs] == ["x=B,T,C", "x_mask=B,T,1:mask-mul"]
    notes = " ".join(report.targets[0].notes)
    assert "x read as (B, 143, T)" in notes


def test_a_norm_of_moved_axes_says_why_it_read_channels_first():
    _, report = _check("ChannelNorm")
    notes = " ".join(report.targets[0].notes)
    assert "as forward moves axis 1 last for F.layer_norm" in notes, notes
    assert "channels read as the model width (C)" in notes


def test_a_multiplied_mask_is_padding_after_real_positions():
    mask = make_input(parse_input("x_mask=B,1,T:mask-mul"), Dims())
    B, T = Dims()["B"], Dims()["T"]
    assert mask.shape == (B, 1, T) and mask.dtype.is_floating_point
    rows = mask[:, 0, :]
    assert bool(((rows == 0) | (rows == 1)).all()) and bool((rows[:, 0] == 1).all())
    assert bool((rows[:, 1:] <= rows[:, :-1]).all())  # real first, then padding
    assert bool((rows == 0).any())


def test_a_width_scale_in_an_inherited_module_is_found_at_its_line():
    _, report = _check("WidthScaledAttention")
    assert report.targets[0].error is None, report.targets[0].error
    lines = (DATA / "signals.py").read_text().splitlines()
    marked = next(i for i, t in enumerate(lines, 1) if t.endswith("# BUG"))
    found = [d for d in report.errors if d.rule == "attention-scale"]
    assert found and found[0].line == marked, [(d.rule, d.line) for d in report.diagnostics]
