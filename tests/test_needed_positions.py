"""Optional forward arguments its code reads unconditionally are passed as what their names
say (position ids: a (B, T) table of integers), at the sizes the code needs (an even head size
for rotary halves); and a module given a mask shapetrace made is never said to be causal in
practice."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import shapetrace as st

_SPEC = importlib.util.spec_from_file_location(
    "defaults_positions", Path(__file__).parent / "data" / "defaults" / "positions.py")
positions = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(positions)


def test_position_ids_left_none_are_passed_as_integer_positions():
    result = st.check(positions.RotaryAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    notes = [n for n in result.notes if n.startswith("position_ids passed as an input (B, T) of longs")]
    assert len(notes) == 1, result.notes
    assert result.dims["d"] % 2 == 0  # rotary halves: an even head size, read from the failure
    ids = [m for r in result.trace.records for m in r.inputs
           if m.src is None and tuple(m.shape) == (result.dims["B"], result.dims["T"])]
    assert ids and not ids[0].dtype.is_floating_point


def test_a_mask_shapetrace_made_does_not_make_the_module_causal_in_practice():
    result = st.check(positions.MaskedAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("attention_mask given" in n for n in result.notes), result.notes
    assert not any("causal in practice" in n for n in result.notes), result.notes


def test_a_mask_the_code_asserts_was_given_is_not_run_as_none():
    result = st.check(positions.AssertedMask).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert not any("None (its default)" in n for n in result.notes), result.notes


def test_positions_a_block_hands_on_are_passed_in_their_own_place():
    result = st.check(positions.RotaryBlock).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("position_ids passed as an input (B, T) of longs") for n in result.notes), result.notes
    ids = [m for r in result.trace.records for m in r.inputs
           if m.src is None and tuple(m.shape) == (result.dims["B"], result.dims["T"])]
    assert ids and not ids[0].dtype.is_floating_point
