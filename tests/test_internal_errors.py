"""A check that fails in shapetrace's own code is never passed off as clean: the target says
which check did not run and why, in its checks, its text, its JSON, the pytest plugin's output
and Gradescope's."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

import behaviour_models as bm
import shapetrace
from shapetrace.behaviour import checks as behaviour_checks
from shapetrace.behaviour import probe as behaviour_probe
from shapetrace.render import results_text
from test_pytest_plugin import make_project, outcomes, run

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = "internal error in shapetrace's"
ATTENTION = dict(init={"n_embd": "C", "n_head": "H", "block_size": "L"}, inputs=["x=B,T,C"])


def _skipped(result) -> dict[str, dict]:
    return {s["check"]: s for s in result.checks["skipped"]}


def test_a_failure_in_the_dependency_check_skips_it_and_keeps_what_ran(monkeypatch):
    monkeypatch.setattr(behaviour_probe, "reduce_grad", None)  # a bug in the checks' own code
    result = shapetrace.check(bm.CausalSelfAttention, causal=True, **ATTENTION).targets[0]
    assert result.error is None and result.ok  # not the module's fault: no finding made up
    skipped = _skipped(result)
    for name in ("batch-leak", "causal-leak"):
        assert skipped[name]["internal_error"] is True
        assert skipped[name]["reason"].startswith(f"{INTERNAL} batch-leak and causal-leak check")
        assert "TypeError" in skipped[name]["reason"]
    assert "nondeterministic-eval" in result.checks["ran"]  # it finished before the failure
    assert result.not_checked == ["batch-leak", "causal-leak"]
    text = " ".join(results_text([result], show_trace=False).split())
    assert "! no problems found by the checks that ran; batch-leak and causal-leak not checked: " \
           "internal error in shapetrace" in text
    assert "✓" not in text
    data = json.loads(json.dumps(result.to_json()))
    assert {s["check"] for s in data["checks"]["skipped"] if s.get("internal_error")} \
        == {"batch-leak", "causal-leak"}
    assert any(n.startswith("batch-leak and causal-leak not checked: " + INTERNAL)
               for n in data["notes"])


def test_a_failure_in_the_first_check_skips_all_three(monkeypatch):
    monkeypatch.setattr(behaviour_checks, "outputs_equal", None)
    result = shapetrace.check(bm.CausalSelfAttention, causal=True, **ATTENTION).targets[0]
    skipped = _skipped(result)
    for name in ("nondeterministic-eval", "batch-leak", "causal-leak"):
        assert skipped[name].get("internal_error") is True
        assert skipped[name]["reason"].startswith(f"{INTERNAL} nondeterministic-eval check")
        assert name not in result.checks["ran"]



@pytest.mark.parametrize("rule, module, function", [
    pytest.param("stateful-forward", "repeat", "stateful_forward", id="stateful-forward"),
    pytest.param("weight-without-effect", "reach", "weights_without_effect", id="weight-without-effect"),
    pytest.param("mask-ignored", "masks", "padding_ignored", id="mask-ignored"),
    pytest.param("attention-textbook", "textbook", "textbook_attention", id="attention-textbook"),
    pytest.param("position-frequencies", "tables", "frozen_tables", id="position-frequencies"),
])
def test_a_failure_in_a_value_property_says_it_was_not_checked(monkeypatch, rule, module, function):
    monkeypatch.setattr(getattr(behaviour_checks, module), function, None)  # a bug in the checks
    result = shapetrace.check(bm.CausalSelfAttention, causal=True, **ATTENTION).targets[0]
    assert result.error is None
    skipped = _skipped(result)
    assert skipped[rule]["internal_error"] is True
    assert skipped[rule]["reason"].startswith(f"{INTERNAL} {rule} check: TypeError")
    assert {"batch-leak", "causal-leak", "nondeterministic-eval"} <= set(result.checks["ran"])


class _Broken:
    """A table of ops that fails when asked: a bug in one check's own code."""

    def __contains__(self, item):
        raise TypeError("a broken table of ops")


def test_a_check_that_fails_reading_a_shared_run_leaves_the_others(monkeypatch):
    # rotary-pairing keeps products' operands as the run goes, in the run the textbook
    # comparison and position-frequencies read too: its failure there is its own
    monkeypatch.setattr(behaviour_checks.rotary, "MULS", _Broken())
    result = shapetrace.check(bm.CausalSelfAttention, causal=True, **ATTENTION).targets[0]
    assert result.error is None
    skipped = _skipped(result)
    assert skipped["rotary-pairing"]["internal_error"] is True
    assert skipped["rotary-pairing"]["reason"].startswith(f"{INTERNAL} rotary-pairing check: TypeError")
    assert "attention-textbook" not in skipped and "position-frequencies" not in skipped


def test_a_finding_made_before_the_failure_stands(monkeypatch):
    # dropout left on in eval is found first; the dependency check then fails in shapetrace
    monkeypatch.setattr(behaviour_probe, "reduce_grad", None)
    result = shapetrace.check(bm.DropoutInEval, init={"n_embd": "C", "n_head": "H"},
                              inputs=["x=B,T,C"], causal=True).targets[0]
    assert [d.rule for d in result.diagnostics if d.rule in behaviour_checks.RERUNS] \
        == ["nondeterministic-eval"]
    assert not result.ok  # the finding decides the verdict
    text = " ".join(results_text([result], show_trace=False).split())
    assert "error; batch-leak and causal-leak not checked: internal error in shapetrace" in text


def test_sizes_that_collide_never_read_as_clean():
    # a block whose width equals the batch size (B = C = 8): each behaviour check either ran,
    # or did not and says so, with the reason
    sys.path.insert(0, str(ROOT))
    try:
        from reference_models.m11_block import FeedForward
    finally:
        sys.path.remove(str(ROOT))
    result = shapetrace.check(FeedForward, dims={"B": 8, "C": 8}).targets[0]
    assert result.error is None
    skipped = _skipped(result)
    text = " ".join(results_text([result], show_trace=False).split())
    for name in behaviour_checks.RERUNS:
        assert (name in result.checks["ran"]) != (name in skipped)
        if skipped.get(name, {}).get("internal_error"):
            assert INTERNAL in skipped[name]["reason"]
            assert f"{name}" in text and "not checked: internal error" in text
    if result.not_checked:
        assert "✓ no problems found" not in text


def test_the_plugin_and_gradescope_show_a_check_that_did_not_run(pytester):
    make_project(pytester, targets=("student/fixed.py",))
    pytester.makeconftest(textwrap.dedent("""
        import shapetrace.behaviour.probe as probe

        probe.reduce_grad = None  # a bug in shapetrace's own checks
    """))
    result = run(pytester, "--shapetrace-gradescope=results/results.json")
    target = "shapetrace::student/fixed.py::Attention"
    assert outcomes(result) == {target: "PASSED"}  # the student is not failed for it
    result.stdout.fnmatch_lines(["*not checked: internal error in shapetrace*"])
    document = json.loads((pytester.path / "results" / "results.json").read_text())
    (test,) = [t for t in document["tests"] if t["name"] == target]
    assert "not checked: internal error in shapetrace" in test["output"]
    assert "✓ no problems found" not in test["output"]


def test_a_batch_as_long_as_another_axis_is_not_reordered_and_says_so():
    """B = C = 8: no output has one axis of the batch's size to reorder back, so the reordering
    half of batch-leak is left out with its reason, not crashed on."""
    sys.path.insert(0, str(ROOT))
    try:
        from reference_models.m11_block import FeedForward
    finally:
        sys.path.remove(str(ROOT))
    result = shapetrace.check(FeedForward, dims={"B": 8, "C": 8}).targets[0]
    assert not any(s.get("internal_error") for s in result.checks["skipped"]), result.checks
    notes = json.loads(json.dumps(result.to_json()))["notes"]
    assert any("reordered was not checked, as no output has one axis of the batch's size 8" in n
               for n in notes), notes
