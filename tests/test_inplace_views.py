"""A module that writes in place into one of several views (autograd refuses the write when
the behaviour checks ask for gradients) is still checked: its dependencies are read by changing
one row at a time, so a correct one is clean with no note that the checks could not run, and a
causal mask built the wrong way round is found."""

from __future__ import annotations

from pathlib import Path

import shapetrace as st
from shapetrace.drive.targets import resolve_targets

DATA = Path(__file__).parent / "data" / "inplace"
ROOT = Path(__file__).parent.parent


def _check(cls: str, causal: bool | None = True):
    (target,) = resolve_targets(f"{DATA / 'views.py'}::{cls}", root=ROOT)
    return st.check(target.cls, target=target.display, causal=causal).targets[0]


def test_a_write_into_a_view_autograd_refuses_leaves_the_checks_running():
    result = _check("ZeroedPaddedValues")
    assert result.error is None and not result.diagnostics, result.diagnostics
    assert not any("raised while re-running" in n for n in result.notes), result.notes
    assert not result.skipped, result.skipped


def test_a_causal_leak_behind_such_a_write_is_found():
    result = _check("LeakyZeroedValues")
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["causal-leak"]


def test_a_batch_wide_starting_scale_of_an_iteration_is_no_batch_leak():
    result = _check("PseudoInverseStart", causal=None)
    assert result.error is None, result.error
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == [], result.diagnostics
