"""A module that writes in place into one of several views, or into a tensor its backward needs
(autograd refuses the write, or the backward, when the behaviour checks ask for gradients) is
still checked: its dependencies are read by changing one row at a time, so a correct one is
clean with no note that the checks could not run, and a causal mask built the wrong way round,
or a norm over the batch, is found."""

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


def _check_saved(cls: str):
    (target,) = resolve_targets(f"{DATA / 'saved.py'}::{cls}", root=ROOT)
    return st.check(target.cls, target=target.display, inputs=["x=B,T,C"]).targets[0]


def test_a_write_into_a_tensor_the_backward_needs_leaves_the_checks_running():
    # autograd refuses the backward ("modified by an inplace operation"): not an internal error
    result = _check_saved("DividedInPlace")
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["input-mutated"]
    assert not any("internal error" in n for n in result.notes), result.notes
    assert not any(s["check"] == "batch-leak" for s in result.skipped), result.skipped


def test_a_batch_leak_behind_such_a_write_is_found():
    result = _check_saved("DividedByTheBatch")
    rules = sorted(d.rule for d in result.diagnostics if d.severity == "error")
    assert rules == ["batch-leak", "input-mutated"], result.diagnostics
