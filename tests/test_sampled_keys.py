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
