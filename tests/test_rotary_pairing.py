"""rotary-pairing: a rotary turn whose table pairs the features one way and whose rotation pairs
them the other is found (once for q and k, at the first turn, naming the cos table's line);
rotary embeddings of other styles stay quiet: halves, neighbours, a partial turn, complex
numbers, and a turn scaled on purpose (xPos-like)."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

FILE = Path(__file__).parent / "data" / "rotary" / "turns.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _result(cls: str):
    result = resolved.result(FILE, cls)
    assert result.error is None, result.error
    return result


def _line(text: str) -> int:
    return next(i for i, line in enumerate(FILE.read_text().splitlines(), 1) if text in line)


def test_a_table_paired_the_other_way_is_found_once_at_the_first_turn():
    result = _result("RotaryMismatched")
    found = [d for d in result.diagnostics if d.rule == "rotary-pairing"]
    assert len(found) == 1, found
    (finding,) = found
    assert finding.line == _line("q = q * cos + self.rotate(q) * sin")
    assert finding.severity == "error"
    assert f"the cos table at line {_line('cos, sin = emb.cos(), emb.sin()')}" in finding.message
    assert "repeat_interleave(2, -1)" in finding.hint


@pytest.mark.parametrize("cls", ["Rotary", "RotaryNeighbours", "RotaryPartial", "RotaryComplex",
                                 "RotaryScaled"])
def test_rotary_styles_that_turn_stay_quiet(cls):
    result = _result(cls)
    assert [(d.rule, d.line) for d in result.diagnostics if d.severity != "info"] == []


def test_a_module_without_a_turn_reads_nothing():
    from shapetrace.behaviour.rotary import _turn

    class Rec:
        def __init__(self, op, inputs):
            self.op, self.inputs = op, inputs

    class Meta:
        def __init__(self, made_by=None):
            self._made_by, self._slot = made_by, 0

    # x * w + y * u of plain tensors: no table made by cos or sin
    records = [Rec("*", [Meta(), Meta()]), Rec("*", [Meta(), Meta()])]
    add = Rec("+", [Meta(0), Meta(1)])
    assert _turn(records, add) is None
