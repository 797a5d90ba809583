"""rotary-pairing: a rotary turn whose table pairs the features one way and whose rotation pairs
them the other is found (once for q and k, at the first turn), its tables made in forward or
cached as buffers;
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
    (finding,) = found  # at the line that paired the angles, used where q is turned
    assert finding.line == _line("return freqs.repeat_interleave(2, dim=-1)")
    assert finding.used_at[1] == _line("q = q * cos + self.rotate(q) * sin")
    assert finding.severity == "error"
    assert "changes each vector's length" in finding.message
    assert f"the rotation that pairs them at line {_line('return torch.cat((-x2, x1), dim=-1)')}" \
        in finding.message, finding.message  # the other half of the mismatch: either may be the fix
    assert "repeat_interleave(2, -1)" in finding.hint


def test_a_rotation_that_turns_no_pair_is_found_at_the_rotation():
    """Neighbours split, halves joined: turned twice a vector is not its own negative, so the
    rotation is wrong whatever the table holds; the finding is at its line."""
    result = _result("RotaryHalfJoined")
    found = [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"]
    assert found == [("rotary-pairing", _line("return torch.cat((-x2, x1), dim=-1)  # neighbours"))]
    (finding,) = [d for d in result.diagnostics if d.rule == "rotary-pairing"]
    assert "does not turn pairs of features" in finding.message


def test_a_table_laid_out_by_blocks_is_found_where_it_is_laid_out():
    """Neighbours rotated right; the table's angles tiled by blocks in forward: the finding is
    at the tiling, not where the angles were made."""
    result = _result("RotaryBlockTiled")
    found = [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"]
    assert found == [("rotary-pairing", _line("cos = cos.repeat(1, 2)"))], found


def test_a_rotation_written_into_a_copy_is_read_as_one():
    """``turned[..., :h] = -x[..., h:]`` into ``x.clone()``: the writes place x's values."""
    result = _result("RotaryWrittenInPlaceMismatched")
    found = [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"]
    assert found == [("rotary-pairing", _line("return freqs.repeat_interleave(2, dim=-1)"))], found


def test_a_table_cached_as_buffers_is_read_by_its_values():
    """cos and sin cached in the constructor have no producer in the trace: c² + s² = 1 says."""
    result = _result("CachedAttentionMismatched")
    found = [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"]
    assert found == [("rotary-pairing", _line('self.register_buffer("cos_cached"'))]
    (finding,) = [d for d in result.diagnostics if d.rule == "rotary-pairing"]
    assert finding.used_at[1] == _line("return x * self.cos_cached[:T]")
    assert "cached as `cos_cached`" in finding.message


@pytest.mark.parametrize("cls", ["Rotary", "RotaryNeighbours", "RotaryPartial", "RotaryComplex",
                                 "RotaryScaled", "CachedAttention", "RotaryWrittenInPlace"])
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

    # x * w + y * u of plain tensors: y not moved from x
    records = [Rec("*", [Meta(), Meta()]), Rec("*", [Meta(), Meta()])]
    for i, rec in enumerate(records):
        rec.index = i
    add = Rec("+", [Meta(0), Meta(1)])
    import torch

    operands = {0: [torch.ones(3), torch.ones(3)], 1: [torch.ones(3), torch.zeros(3)]}
    assert _turn(records, add, operands) is None
