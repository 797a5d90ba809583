"""A mask argument its code overwrites before reading (a helper that makes its own) is passed as
None; keys drawn at random in eval are a sampler's, a warning; dropout left on stays an error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import shapetrace as st
from shapetrace.analysis.code import never_read

_PATH = Path(__file__).parent / "data" / "sampled" / "keys.py"
_SPEC = importlib.util.spec_from_file_location("sampled_keys", _PATH)
keys = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(keys)


def test_an_argument_assigned_before_it_is_read_is_never_read():
    assert never_read(keys.SampledKeys.forward, "attn_mask")
    assert not never_read(keys.SampledKeys.forward, "queries")


def test_keys_drawn_at_random_in_eval_are_a_warning():
    result = st.check(keys.SampledKeys).targets[0]
    assert result.error is None, result.error
    found = [d for d in result.diagnostics if d.rule == "nondeterministic-eval"]
    assert found and all(d.severity == "warning" for d in found), result.diagnostics
    assert "drawn at random" in found[0].message


def test_dropout_left_on_in_eval_is_still_an_error():
    result = st.check(keys.DroppedInEval).targets[0]
    (found,) = [d for d in result.diagnostics if d.rule == "nondeterministic-eval"]
    assert found.severity == "error"


def _reads_in_a_closure(x, table):
    def turn(t):
        return t * table

    return turn(x)


def _reads_after_a_branch(x, mask):
    if x.sum() > 0:
        mask = None  # set on one path only: the other still reads the argument
    return x if mask is None else x * mask


def test_reads_in_a_closure_or_past_a_branch_are_reads():
    assert not never_read(_reads_in_a_closure, "table")
    assert not never_read(_reads_after_a_branch, "mask")
