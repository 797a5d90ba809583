"""Rotary tables handed to forward are made as (1, T, d); code that takes one row per position
and lifts the rows itself gets them so, once the lifted tables did not fit: no finding from the
guess, and the module is checked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

import shapetrace as st

_SPEC = importlib.util.spec_from_file_location(
    "rotary_tables", Path(__file__).parent / "data" / "rotary_tables" / "tables.py")
tables = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tables)


def _table_shapes(result):
    B, T = result.dims["B"], result.dims["T"]
    return {tuple(m.shape) for r in result.trace.records for m in r.inputs
            if m.src is None and len(m.shape) in (2, 3) and m.shape[-2] == T and B not in m.shape}


def test_tables_cut_and_lifted_by_the_code_get_one_row_per_position():
    result = st.check(tables.RowTableAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("cos, sin made with one row per position (T, d)") for n in result.notes)
    assert (result.dims["T"], result.dims["d"]) in _table_shapes(result)


def test_tables_applied_as_lifted_stay_lifted():
    result = st.check(tables.LiftedTableAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert not any("one row per position" in n for n in result.notes)
    assert (1, result.dims["T"], result.dims["d"]) in _table_shapes(result)


def test_a_real_bug_beside_row_tables_is_still_found():
    class Unscaled(tables.RowTableAttention):
        def forward(self, x, cos, sin):
            b, n, _ = x.shape
            q = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
            k = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
            v = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            weights = torch.softmax(q @ k.transpose(2, 3), dim=-2)  # over the queries
            return self.out_proj((weights @ v).transpose(1, 2).reshape(b, n, -1))

    result = st.check(Unscaled).targets[0]
    assert result.error is None
    assert "softmax-axis" in {d.rule for d in result.diagnostics}, result.diagnostics


def test_tables_that_lift_the_values_they_rotate_are_read_again_though_the_forward_runs():
    result = st.check(tables.RowTableRuns).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("cos, sin made with one row per position") and "lifted" in n
               for n in result.notes), result.notes


def test_tables_are_read_again_after_another_reading_made_the_forward_run():
    result = st.check(tables.RowTableEven).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert result.dims["d"] % 2 == 0
    assert any(n.startswith("cos, sin made with one row per position") for n in result.notes), result.notes


def test_a_table_multiplied_with_complex_pairs_is_a_table_of_rotations_whatever_its_name():
    result = st.check(tables.ComplexRotations).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(m.dtype.is_complex for r in result.trace.records for m in r.inputs if m.src is None)
