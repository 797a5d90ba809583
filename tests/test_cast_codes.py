"""An input guessed as real values whose values the forward casts to indices (calendar fields,
category codes: ``x.long()`` then a small table per column). Drawn from ``randn``, it casts to
negative indices and the lookup fails on correct code. The failure says what the values are:
whole numbers below the table's rows (the smallest table the forward reached), read so with a
note; the behaviour checks change them as tokens, within their range."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.base.specs import make_input, parse_input


class CalendarCodes(nn.Module):
    """A learned vector per month, weekday and hour, from codes held as floats."""

    def __init__(self, d_model):
        super().__init__()
        self.month = nn.Embedding(12, d_model)
        self.weekday = nn.Embedding(7, d_model)
        self.hour = nn.Embedding(24, d_model)

    def forward(self, x):
        codes = x.long()
        return self.month(codes[..., 0]) + self.weekday(codes[..., 1]) + self.hour(codes[..., 2])


class CodesTable(nn.Module):
    """Codes taken as rows of a table indexed by hand, then mixed with real features."""

    def __init__(self, d_model):
        super().__init__()
        self.table = nn.Parameter(torch.randn(2, d_model))  # a flag: weekday or weekend
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(self.table[x[:, :, 0].to(torch.long)])


class PooledCodes(CalendarCodes):
    """Mixes the samples of the batch: each output reads every sample's codes."""

    def forward(self, x):
        out = super().forward(x)
        return out + out.mean(dim=0, keepdim=True)


class StampedSeries(nn.Module):
    """A series and its time stamps: the stamps, a name that says nothing, are handed to the
    calendar module, whose own forward reads its parameter as vectors; both inputs then have
    one shape, and only the stamps are codes."""

    def __init__(self, d_model):
        super().__init__()
        self.values = nn.Linear(d_model, d_model)
        self.calendar = CalendarCodes(d_model)

    def forward(self, x, stamps):
        return self.values(x) + self.calendar(stamps)


class ConvValues(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        self.conv = nn.Conv1d(c_in, d_model, 3, padding=1)

    def forward(self, x):
        return self.conv(x.transpose(1, 2)).transpose(1, 2)


class Forecaster(nn.Module):
    """Values and their time marks, each embedded by a module of its own, the marks' module
    chosen in the constructor: only the module built says where ``x_mark`` goes."""

    def __init__(self, c_in, d_model, marks="codes"):
        super().__init__()
        self.values = ConvValues(c_in, d_model)
        self.marks = CalendarCodes(d_model) if marks == "codes" else nn.Linear(4, d_model)

    def forward(self, x, x_mark):
        return self.values(x) + self.marks(x_mark)


def _errors(result):
    return [d for d in result.diagnostics if d.severity == "error"]


def test_codes_cast_to_indices_are_read_as_whole_numbers_below_the_smallest_table():
    result = st.check(CalendarCodes).targets[0]
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics
    read = [n for n in result.notes if "whole numbers" in n]
    assert len(read) == 1 and "[0, 7)" in read[0] and "--input x=B,T,C:float:7" in read[0], result.notes
    assert "batch-leak" in result.checks["ran"], result.checks
    assert not any("raised while re-running" in n for n in result.notes), result.notes


def test_codes_indexing_a_table_by_hand_are_read_the_same_way():
    result = st.check(CodesTable).targets[0]
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics
    assert any("[0, 2)" in n and "([] at" in n for n in result.notes), result.notes


def test_codes_mixed_across_the_batch_are_a_batch_leak():
    result = st.check(PooledCodes).targets[0]
    assert result.error is None, result.error
    assert [d for d in result.diagnostics if d.rule == "batch-leak"], result.diagnostics


def test_given_codes_are_whole_numbers_below_their_bound():
    spec = parse_input("x=B,T,3:float:7")
    value = make_input(spec, st.Dims(), generator=torch.Generator().manual_seed(1))
    assert value.is_floating_point() and torch.equal(value, value.round())
    assert 0 <= value.min() and value.max() < 7


def test_an_input_handed_to_a_module_of_codes_is_read_as_its_codes_and_no_other():
    result = st.check(StampedSeries).targets[0]
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics
    codes = [n for n in result.notes if "whole numbers" in n]
    assert len(codes) == 1 and codes[0].startswith("stamps read as whole numbers in [0, 7)"), result.notes


def test_an_input_followed_into_a_module_of_its_own_is_read_as_that_module_reads_it():
    result = st.check(Forecaster).targets[0]
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics
    assert any(n.startswith("x_mark read as (B, T, C) from the layer") for n in result.notes), result.notes
    assert any(n.startswith("x_mark read as whole numbers in [0, 7)") for n in result.notes), result.notes
