"""A module set up by a call of its own before its forward (``init_keys(keys)`` projecting the
keys once) is checked with that call made first, on inputs read from the set-up's parameters,
and said in a note; a bug of its forward is still found at its line. A layer that sets a
submodule up through a method of its own is set up by that method."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import resolved

DATA = Path(__file__).parent / "data" / "setup"
_check = partial(resolved.result, DATA / "keyed.py")


def test_a_module_set_up_by_a_call_of_its_own_is_checked_with_that_call_first():
    result = _check("KeyedAttention")
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert any("KeyedAttention.init_keys(keys=B,S,C) called before each forward" in n
               for n in result.notes), result.notes


def test_a_bug_of_the_set_up_module_is_found_at_its_line():
    result = _check("KeyedAttentionWrongAxis")
    assert ("softmax-axis", 34) in {(d.rule, d.line) for d in result.diagnostics}, \
        [(d.rule, d.line) for d in result.diagnostics]


def test_a_layer_sets_its_submodule_up_through_its_own_method():
    result = _check("CrossDecoderLayer")
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line) for d in result.diagnostics]
    assert any("CrossDecoderLayer.init_keys(states=B,S,C) called before each forward" in n
               for n in result.notes), result.notes


def test_inputs_the_caller_gave_are_set_up_for_too():
    """The caller's inputs are forward's: the set-up call is still made, never op-failed."""
    result = _check("KeyedAttention", inputs=["query=B,T,C"])
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
    assert any("init_keys(keys=B,S,C) called before each forward" in n for n in result.notes)


def test_a_set_up_nothing_gives_inputs_for_is_a_target_error_naming_it():
    result = _check("SwitchedTable")
    assert not result.diagnostics
    assert result.error and "only SwitchedTable.set_table() sets" in result.error, result.error


def test_an_entry_only_a_set_up_call_fills_is_a_target_error_naming_it():
    """forward reads ``self.samples['weight']``, which only ``set_sample_width()`` fills: a
    module set up before its forward (never op-failed)."""
    result = _check("SampledWidthNorm")
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert result.error and "self.samples['weight'], which only SampledWidthNorm.set_sample_width() sets" \
        in result.error, result.error
