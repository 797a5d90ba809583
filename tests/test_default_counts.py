"""Readings of shapetrace's own sizes that must not become findings. A head count set to a probe
size over the constructor's own default, that the forward cannot split by (a width rounded to
suit the default), is put back to the default and said in a note, in a config dataclass and as
a plain argument; a view that fails for a reason of its own (a head size written as a number) is
still the code's failure. A sequence length that runs only by emptying an axis is a target
error, never a finding."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.drive.targets import resolve_targets
import resolved

DATA = Path(__file__).parent / "data" / "defaults"
ROOT = Path(__file__).parent.parent


_check = partial(resolved.result, DATA / "rounded.py")


@pytest.mark.parametrize("cls, named", [("HeadwiseMixer", "config.num_heads at its default 4 (not 11)"),
                                        ("RoundedHeads", "n_heads at its default 8 (not 11)")])
def test_a_count_the_width_was_rounded_for_is_kept_at_its_default(cls, named):
    result = _check(cls)
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert any(named in n and "rounded.py:" in n for n in result.notes), result.notes


def test_a_view_that_fails_at_any_head_count_is_still_found():
    result = _check("FixedHeadSize")
    assert result.error is None
    assert [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"] == [("op-failed", 68)]
    assert not any("at its default" in n for n in result.notes)


def test_a_count_the_caller_set_is_never_put_back():
    result = _check("RoundedHeads", init={"d_model": "C", "n_heads": 11})
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]


def test_a_length_that_runs_only_by_emptying_an_axis_is_a_target_error_never_a_finding():
    (target,) = resolve_targets(f"{DATA / 'split_tokens.py'}::QueryTokensPool", root=ROOT)
    result = st.check(target.cls, target=target.display).targets[0]
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert result.error and "emptying an axis" in result.error and "--dims" in result.error


def test_the_same_module_at_sizes_that_fit_is_checked():
    (target,) = resolve_targets(f"{DATA / 'split_tokens.py'}::QueryTokensPool", root=ROOT)
    result = st.check(target.cls, init={"dim": "C", "num_heads": "H", "num_queries": 3},
                      target=target.display).targets[0]
    assert result.error is None and not [d for d in result.diagnostics if d.severity == "error"]


_tied = partial(resolved.result, DATA / "tied.py")


def test_defaults_that_say_one_size_twice_are_set_together():
    """``bank_dim`` and ``dim`` both default to 256: with the width at a probe size and the
    queries left at 256, the norm meets both sizes and fails on shapetrace's choice; the module
    is built again with both at the probe size, said in a note, and checked clean."""
    result = _tied("QueryBank")
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert any("bank_dim=" in n and "like dim (both default to 256)" in n for n in result.notes), result.notes


def test_a_failure_the_tied_sizes_do_not_explain_is_still_found():
    result = _tied("QueryBankWrongOut")
    assert [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"] == [("op-failed", 31)]


def test_tied_sizes_the_caller_set_are_never_changed():
    result = _tied("QueryBank", init={"dim": "C", "bank_dim": 256, "n_attn_heads": "H"})
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]


_empty = partial(resolved.result, DATA / "empty_defaults.py")


def test_a_forward_failing_on_an_empty_default_is_a_target_error_naming_it():
    """``pos_emb=torch.empty(0)`` only fills the signature: the linear layer that reads it fails
    on a value the caller passes, no verdict on the code."""
    result = _empty("RelativeTableAttention")
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert result.error and "pos_emb left at an empty default" in result.error, result.error
    assert "empty_defaults.py:27" in result.error


def test_an_empty_default_the_code_handles_is_checked_and_a_real_failure_found():
    assert not _empty("CachedAttention").diagnostics
    wrong = _empty("CachedAttentionWrongMerge")
    assert [(d.rule, d.line) for d in wrong.diagnostics if d.severity == "error"] == [("op-failed", 59)]


def test_a_module_argument_that_needs_an_even_width_is_built_at_one():
    result = resolved.result(DATA / "even_argument.py", "PositionedMixer")
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line) for d in result.diagnostics]
    assert any("a module its constructor builds needs an even width" in n for n in result.notes), result.notes


def test_sizes_shapetrace_chose_that_do_not_add_up_are_a_target_error():
    result = _tied("FusedHeads")
    assert not result.diagnostics, [(d.rule, d.line) for d in result.diagnostics]
    assert result.error and "the constructor arguments it chose do not add up" in result.error, result.error


def test_the_same_split_with_sizes_given_that_do_not_add_up_is_found():
    result = _tied("FusedHeads", init={"in_features": "C", "out_features": 12, "num_q_heads": 2,
                                       "q_head_dim": 3, "num_kv_heads": 1, "kv_head_dim": 2})
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
