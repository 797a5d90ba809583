"""position-axis: position tables counted, cut or applied along the batch, the heads, the head
size or the width instead of time (tests/data/positions/models.py). Every buggy module there
broadcasts and runs; the rule follows each position axis by its place through the ops to the
data it meets, and reports at the line that counted or cut the positions. The correct modules
(sinusoidal tables batch-first and time-first, learned positions, rotary angles heads-first,
tokens-first, complex and cached with a shared key/value head, ALiBi, relative position biases,
patch positions, source positions in cross-attention, a per-head table looked up whole, batch
indices that pick rows) are quiet, with the behaviour checks and without them."""

from __future__ import annotations

from pathlib import Path

import pytest
from style_corpus import assert_found_once, bug_line, check, modules, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODELS = Path(__file__).with_name("data") / "positions" / "models.py"
CORRECT = list(modules([MODELS], "correct", "positions"))
BUGGY = list(modules([MODELS], "buggy", "positions"))
BY_BATCH = [p for p in BUGGY if "Batch" in p.id]


def test_there_are_both_kinds():
    assert len(CORRECT) >= 18 and len(BUGGY) >= 7


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_positions_are_quiet(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.severity in ("error", "warning")], show(report)


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_positions_are_quiet_without_the_behaviour_checks(cls):
    report = check(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.diagnostics, show(report)


@pytest.mark.parametrize("cls", BUGGY)
def test_positions_on_the_wrong_axis_are_found_at_the_line_that_sized_them(cls):
    report, found = assert_found_once(cls)
    assert found.severity == "error" and not report.ok
    name = found.data["axis"]
    assert name in ("B", "H")
    assert f"({name})" in found.message
    assert "(T)" in found.hint, found.hint  # the axis to count them by, in the data they meet


@pytest.mark.parametrize("cls", BY_BATCH)
def test_a_table_cut_by_the_batch_is_one_finding_not_two(cls):
    """The behaviour checks see the same bug as a batch-leak at the same line: one finding."""
    report = check(cls)
    at_line = [d for d in report.diagnostics if d.line == bug_line(cls)]
    assert [d.rule for d in at_line] == ["position-axis"], show(report)
    assert "sample b gets position b" in at_line[0].message



def _cls(name: str):
    return next(p.values[0] for p in BUGGY + CORRECT if p.id.endswith(f"-{name}"))


def test_rotary_over_heads_names_the_heads_and_the_line_that_applies_them():
    report, found = assert_found_once(_cls("RotaryOverHeads"))
    assert "torch.arange(q.size(1)" in found.message
    assert "each head is turned by its own index" in found.message
    assert "(B, H, T, d)" in found.message and "at line" in found.message
    assert "axis 2 (T), .size(2)" in found.hint


def test_a_cached_table_cut_by_the_heads_names_the_table():
    _, found = assert_found_once(_cls("RotaryCacheCutByHeads"))
    assert found.message.startswith("the position table (L, d) is cut to the heads (H)")


def test_the_older_tutorials_table_on_batch_first_input():
    _, found = assert_found_once(_cls("TableCutByBatchUndeclared"))
    assert "`self.pe[: x.size(0)]`" in found.message and "(B, T, C)" in found.message


def test_the_time_first_table_is_quiet_when_its_docstring_says_time_first():
    report = check(_cls("SinusoidTimeFirstUndeclared"))
    assert report.ok and not report.diagnostics, show(report)
