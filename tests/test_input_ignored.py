"""input-ignored: an output computed from the inputs that is the same whatever they are.

A document embedding read at the first position of a causal encoder, where a learned token was
put, sees nothing of the document: found at the op that read it, saying the module is causal.
The same encoder bidirectional, read at its last position, or read at a first position that is
a real token, stays quiet; so do outputs made from parameters or tables alone, a shape taken
from the input, a zero-initialised output layer and a codebook lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).parent / "data" / "constant" / "outputs.py"


def _line(text: str) -> int:
    lines = DATA.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_a_causal_encoder_read_at_its_learned_first_token_is_found_where_it_is_read():
    result = resolved.result(DATA, "CausalDocEncoder")
    assert resolved.errors(result) == [("input-ignored", _line("# the first position"))]
    (found,) = result.diagnostics
    assert "the same whatever they are" in found.message and "causal" in found.message
    assert "x[:, 0]" in found.message


def test_every_value_filled_is_found_at_the_fill():
    result = resolved.result(DATA, "FilledEverywhere")
    assert resolved.errors(result) == [("input-ignored", _line("# filled"))]


@pytest.mark.parametrize("cls", ["DocEncoder", "CausalLastToken", "CausalFirstRealToken",
                                 "WithTable", "ZeroConv", "Quantizer", "Block"])
def test_outputs_that_move_with_the_inputs_or_never_came_from_them_stay_quiet(cls):
    result = resolved.result(DATA, cls)
    assert result.error is None and resolved.errors(result) == [], result.diagnostics
    assert "input-ignored" in result.checks["ran"]
