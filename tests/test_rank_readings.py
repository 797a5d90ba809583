"""Inputs guessed from their names with more axes than the module takes are read again with
fewer (a value per sample, a vector per sample, a timestep's embedding), and a default of None
that the forward needs is passed: each such module is checked and clean, saying what it read.
Integer ids that a table runs out of only because the code shifts them are read one in from
each end of their range, or else are a target error. A forward that fails at any reading stays
the code's failure, found at its line."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).parent / "data" / "ranks"


_check = partial(resolved.result, DATA / "conditioning.py")


@pytest.mark.parametrize("cls, read", [
    ("SinusoidalTime", ["x read as a value per sample, (B,)"]),
    ("ModulatedNorm", ["emb passed as an input", "emb read as a vector per sample, (B, C)"]),
    ("TimedBlock", ["t read as a vector per sample, (B, C): as integers (B,) the forward failed"]),
])
def test_a_guess_with_fewer_axes_stands_when_the_forward_runs(cls, read):
    result = _check(cls)
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    notes = " ".join(result.notes)
    assert all(r in notes for r in read), result.notes


def test_a_forward_that_fails_at_every_reading_is_still_found():
    result = _check("HeadsViewedWrong")
    assert [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"] == [("op-failed", 59)]
    assert not any("read as" in n for n in result.notes)


def test_ids_shifted_before_their_table_are_read_one_in_from_each_end():
    result = _check("ShiftedIds")
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
    assert any("read one in from each end" in n for n in result.notes), result.notes


def test_ids_that_no_range_fits_are_a_target_error_never_a_finding():
    result = _check("ShiftedTwice")
    assert not result.diagnostics, result.diagnostics
    assert result.error and "may shift its ids" in result.error


@pytest.mark.parametrize("cls, said", [
    ("ShapeBranch", "sets only on another path"),
    ("ChannelScale", None),
    ("LazyHead", None),
])
def test_a_guess_the_code_cannot_take_is_never_a_finding(cls, said):
    result = _check(cls)
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert said is None or (result.error and said in result.error), result.error


def test_two_vectors_per_sample_are_read_together():
    result = _check("PairedVectors")
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
    assert any("x, c read as vectors per sample" in n for n in result.notes), result.notes


_pattern = partial(resolved.result, DATA / "patterns.py")


@pytest.mark.parametrize("cls, read", [
    ("HeadMerge", "x read as (B, H, T, d), the axes of the einops pattern"),  # heads already split
    ("PackedTokensMlp", "x read as (T, C), the sizes the forward unpacks"),  # a flat row of tokens
])
def test_the_code_s_own_words_say_the_axes_of_an_input_it_refused(cls, read):
    result = _pattern(cls)
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert any(read in n for n in result.notes), result.notes


def test_a_bug_at_the_pattern_s_axes_is_found():
    """Found at its line; a warning, as every finding on a layout shapetrace guessed."""
    result = _pattern("HeadMergeBatchSoftmax")
    assert [(d.rule, d.line) for d in result.diagnostics] == [("batch-leak", 25)]


def test_a_pattern_of_other_words_is_no_reading():
    result = _pattern("GroupedPattern")
    assert not result.diagnostics and result.error and "EinopsError" in result.error




def test_channels_first_unpacked_and_moved_is_checked():
    result = _pattern("ChannelsFirstAttention")
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
