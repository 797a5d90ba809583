"""Sizes of a module's structure that nothing sets (a window's side, a grid's side, a kernel's
size) take a value that fits the probe sizes, with a note; a window attention's table of
relative offsets asks for one window of tokens (its side squared), whatever the side."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).parent / "data" / "sides"
_check = partial(resolved.result, DATA / "windows.py")


@pytest.mark.parametrize("cls, said", [
    ("LocalWindowAttention", "window_size=4, a window's side nothing sets"),
    ("GridWindowBlock", "input_resolution=4, the side of a grid of tokens nothing sets"),
    # a pair of sides, as forward unpacks it, with as many tokens as the grid holds
    ("PairGridBlock", "input_resolution=(4, 4), the side of a grid of tokens nothing sets"),
    # a pair read by its indices alone
    ("IndexedPatches", "patch_size=(2, 2), a patch's side nothing sets"),
    ("PooledMixer", "kernel_size=3, a kernel's size nothing sets"),
])
def test_a_size_of_the_structure_nothing_sets_takes_one_that_fits(cls, said):
    result = _check(cls)
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert any(said in n for n in result.notes), result.notes


@pytest.mark.parametrize("side", [4, 7])
def test_a_window_attention_is_run_at_one_window_of_tokens(side):
    """Swin's own default side is 7: the table of offsets is made for 49 tokens, not 7."""
    result = _check("LocalWindowAttention", init={"dim": "C", "num_heads": "H", "window_size": side})
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
    assert result.dims["T"] == side * side
    assert any("the tokens of the grid or window the module is built for" in n for n in result.notes), result.notes


def test_a_bug_of_a_window_attention_is_found_at_its_line():
    result = _check("LocalWindowAttentionOverHeads")
    assert ("softmax-axis", 67) in {(d.rule, d.line) for d in result.diagnostics}, \
        [(d.rule, d.line) for d in result.diagnostics]


@pytest.mark.parametrize("cls", ["RoundedMlp", "BatchCache"])
def test_a_ratio_a_rounding_multiple_and_a_batch_nothing_sets(cls):
    result = _check(cls)
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
