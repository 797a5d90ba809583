"""Idioms known to be right, recognised by what they compute (tests/data/idioms/models.py): the
relative shift in every spelling (pad with F.pad or with a concatenated column of zeros from
``new_zeros`` or ``torch.zeros``, heads-first or time-first, T or 2T-1 relative positions, the
row dropped and read back) is no reshape-jumble; a similarity computed keys first and normalised
over the keys is right once transposed back. The bugs they resemble are still found: the grid
read as (2T-1, T) without its column of zeros, and keys-first scores normalised over the
queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from style_corpus import assert_found_once, check, modules, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODELS = Path(__file__).with_name("data") / "idioms" / "models.py"
CORRECT = list(modules([MODELS], "correct", "idioms"))
BUGGY = list(modules([MODELS], "buggy", "idioms"))


def test_there_are_both_kinds():
    assert len(CORRECT) >= 9 and len(BUGGY) >= 2


@pytest.mark.parametrize("cls", CORRECT)
def test_the_idiom_is_quiet(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.severity in ("error", "warning")], show(report)


@pytest.mark.parametrize("cls", CORRECT)
def test_the_idiom_is_quiet_without_the_behaviour_checks(cls):
    report = check(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.diagnostics, show(report)


@pytest.mark.parametrize("cls", BUGGY)
def test_the_bug_it_resembles_is_found(cls):
    report, found = assert_found_once(cls)
    assert not report.ok
