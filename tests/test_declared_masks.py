"""A mask's meaning the user declares (``mask-keep``: 1 = a real token) is the one the code
must follow: label queries handed SDPA the mask turned the wrong way round attend to the
padding (mask-ignored, at the line that turned it), while the same queries handed the mask as
it is, or filling their scores, stay clean; an output with no position axis (one row per label)
is judged whole. And probe sizes keep apart from the plain numbers the constructor is given
(tests/data/declared/pooled.py, tests/data/cached/tables.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).parent / "data"
INPUTS = ["tokens=B,T,C", "attention_mask=B,T:mask-keep"]


def _check(path: str, cls: str, **kwargs):
    return resolved.result(DATA / path, cls, **kwargs)


_errors = resolved.errors


def _line(path: str, text: str) -> int:
    lines = (DATA / path).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_a_declared_keep_mask_turned_the_wrong_way_is_found_where_it_was_turned():
    result = _check("declared/pooled.py", "LabelsMaskFlipped", inputs=INPUTS)
    (found,) = [d for d in result.diagnostics if d.rule == "mask-ignored"]
    turned = _line("declared/pooled.py", "hidden = attention_mask == 0")
    assert found.line == turned and "declared True/1 = may attend" in found.message
    assert _errors(result) == [("mask-ignored", turned)]


@pytest.mark.parametrize("cls", ["LabelsMaskKept", "LabelsScoresFilled"])
def test_label_queries_that_follow_the_declared_mask_are_clean(cls):
    result = _check("declared/pooled.py", cls, inputs=INPUTS)
    assert result.error is None and not _errors(result), result.diagnostics


def test_without_a_declaration_the_code_s_own_convention_is_not_judged():
    result = _check("declared/pooled.py", "LabelsMaskFlipped",
                    inputs=["tokens=B,T,C", "attention_mask=B,T:long:2"])
    assert not [d for d in result.diagnostics if d.rule == "mask-ignored"]


def test_a_batch_as_large_as_a_number_the_constructor_is_given_is_moved():
    result = _check("cached/tables.py", "LabelQueries", init={"dim": "C", "labels": 5},
                    inputs=["tokens=B,T,C", "keep=B,T:mask-keep"])
    assert result.error is None and not _errors(result)
    assert result.dims["B"] != 5
    said = [*result.notes, *map(str, result.skipped)]
    assert not any("as long" in s for s in said), said


@pytest.mark.parametrize("init, moved", [({"labels": 5}, True), ({"max_batch_size": 5}, False),
                                         ({"window_size": 7}, False), ({"labels": 5}, False)])
def test_only_a_batch_shapetrace_chose_moves_and_only_from_numbers_not_named_for_it(init, moved):
    from shapetrace.base.dims import Dims
    from shapetrace.drive.check import _apart_from_init

    dims = Dims() if moved or "labels" not in init else Dims({"B": 5})  # the last: B set
    got = _apart_from_init(dims, init)
    assert (got["B"] != 5) is moved and got["T"] == dims["T"]
