"""non-finite at its cause (tests/data/non_finite/models.py): the first op that made a NaN or an
Inf from finite inputs, at its own line, with the kind read from the values there. An overflow
in ``q @ k`` is reported at the product (above float32's largest, or below its lowest under a
mask), not at the softmax as "every key masked"; 0/0 at the division; a log of 0 at the log;
a softmax row that is -inf in every key at the softmax; an exp past the largest float at the
exp. Masks by the dtype's lowest number, log masks that leave each row a key, and guarded
divisions make nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from style_corpus import assert_found_once, check, modules, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODELS = Path(__file__).with_name("data") / "non_finite" / "models.py"
CORRECT = list(modules([MODELS], "correct", "non_finite"))
BUGGY = list(modules([MODELS], "buggy", "non_finite"))


def test_there_are_both_kinds():
    assert len(CORRECT) >= 3 and len(BUGGY) >= 6


@pytest.mark.parametrize("cls", CORRECT)
def test_safe_masks_and_divisions_make_nothing(cls):
    report = check(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.rule == "non-finite"], show(report)
    assert report.ok, show(report)


@pytest.mark.parametrize("cls", BUGGY)
def test_found_where_it_was_made_with_its_kind(cls):
    _, found = assert_found_once(cls)
    assert found.data["cause"] == cls.CAUSE, show(_)
    assert cls.CAUSE.split()[0] in found.message


def test_an_overflow_is_never_called_a_masked_row():
    for param in BUGGY:
        cls = param.values[0]
        if cls.CAUSE != "overflow":
            continue
        _, found = assert_found_once(cls)
        assert "every key masked" not in found.message
        assert found.op != "F.softmax" and "softmax" not in found.op
        assert "float32's largest" in found.message
