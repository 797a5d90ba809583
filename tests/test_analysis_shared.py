"""What the analysis keeps and shares so that a trace is read once, and what that sharing must
not blur.

- A ``Dims`` remembers its labels and cuts; one declared with an unnamed size does not share
  them with one declared without.
- A cut's names are worked out once per dims, but every cut makes pieces of its own: pieces of
  one cut merge back into their factor, pieces of two cuts of equal factors do not.
- The rules read each reshape as provenance read it (``Analysis.reshape``), without reading it
  again.
- Early exits (a right scale, operands of one batch, no softmax) say what the full reading says.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.analysis.facts import analyse
from shapetrace.base.dims import Dims
from shapetrace.base.ops import SPLIT_MERGES
from shapetrace.naming.pieces import Piece
from shapetrace.naming.provenance import _piece_axis
from shapetrace.naming.reshapes import reshape_axes, reshape_check
from shapetrace.naming.axes import axis_label, format_axes, fresh_axes

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# --- Dims -----------------------------------------------------------------------------------------

def test_an_unnamed_size_keeps_its_number_beside_an_equal_declaration():
    named = Dims.declared({"C": 8, "H": 2})
    assert named.label(8) == "C"
    assert Dims.declared({"C": 8, "H": 2}, unnamed={8}).label(8) == "8"
    assert named.label(8) == "C"  # unchanged by the other one


def test_dims_reads_as_a_mapping():
    d = Dims({"K": 29})
    assert "K" in d and "C" in d and "Z" not in d and 29 not in d
    assert d.get("Z") is None and d.get("Z", 3) == 3 and d.get("C") == 143
    assert dict(d.items()) == {name: d[name] for name in d}
    assert list(d.keys()) == list(d) and list(d.values()) == [d[name] for name in d]
    assert Dims.declared({"H": 4}).get("d") is None


# --- cuts -----------------------------------------------------------------------------------------

AT_USER_SIZES = Dims.declared({"H": 4})  # a width of 32 no name explains: cuts make pieces


def test_each_cut_of_equal_factors_makes_pieces_of_its_own():
    axis = ((32, "32"),)
    one = reshape_axes((axis,), (4, 8), AT_USER_SIZES)
    two = reshape_axes((axis,), (4, 8), AT_USER_SIZES)
    assert one.ok and two.ok
    assert format_axes(one.axes, AT_USER_SIZES) == format_axes(two.axes, AT_USER_SIZES) == "(4, 8)"
    assert all(isinstance(name, Piece) for a in one.axes for _, name in a)
    assert one.axes[0][0][1].root is not two.axes[0][0][1].root
    # one cut's pieces, in order, are the factor again; pieces of two cuts stay two factors
    assert reshape_axes(one.axes, (32,), AT_USER_SIZES).axes == (axis,)
    mixed = reshape_axes((one.axes[0], two.axes[1]), (32,), AT_USER_SIZES)
    assert mixed.ok and format_axes(mixed.axes, AT_USER_SIZES) == "(4*8,)"


@pytest.mark.parametrize("dims, factor, count, piece", [
    pytest.param(AT_USER_SIZES, (96, "96"), 3, 32, id="pieces"),
    pytest.param(Dims(), (3 * 143, "3*C"), 3, 143, id="named"),
    pytest.param(Dims({"Y": 8}), (8, "Y"), 2, 4, id="a-window"),
])
def test_a_split_cuts_a_one_factor_axis_as_a_reshape_does(dims, factor, count, piece):
    fast = _piece_axis((factor,), piece, count, dims)
    general = reshape_axes(((factor,),), (count, piece), dims).axes[1]
    assert format_axes((fast,), dims) == format_axes((general,), dims)
    assert [(size, type(name)) for size, name in fast] == [(size, type(name)) for size, name in general]
    for (_, a), (_, b) in zip(fast, general):
        if isinstance(a, Piece):
            assert (a.whole, a.outer, a.inner) == (b.whole, b.outer, b.inner)
            assert a.root is not b.root


@pytest.mark.parametrize("axes, shape", [
    pytest.param((((0, "0"),),), (5,), id="into-a-size"),
    pytest.param((((0, "0"),), ((7, "T"),)), (1, 1), id="into-ones"),
])
def test_an_empty_factor_claims_no_layout(axes, shape):
    dims = Dims()
    check = reshape_axes(axes, shape, dims)
    assert check.ok and check.axes == fresh_axes(shape, dims)


# --- the analysis ---------------------------------------------------------------------------------

def test_the_rules_read_each_reshape_as_provenance_read_it():
    with st.trace(dims={"B": 2, "T": 10, "C": 64, "H": 8}) as t:
        x = torch.randn(2, 10, 64)
        x.view(2, 8, 10, 8)  # jumbled: C's H taken before T
        x.view(2, 10, 8, 8)
        x.reshape(20, 64)
        x.transpose(1, 2).reshape(2, 10, 64)  # jumbled: (B, C, T) read as (B, T, C)
        x.flatten(1)
    a = analyse(t)
    reshapes = a.records_of(SPLIT_MERGES)
    assert len(reshapes) == 5
    for rec in reshapes:
        kept, again = a.reshape(rec), reshape_check(rec, a.dims)
        assert (kept.ok, kept.bad_axis) == (again.ok, again.bad_axis)
        assert [axis_label((f,), a.dims) for f in kept.took] == \
            [axis_label((f,), a.dims) for f in again.took]
        assert format_axes(kept.axes, a.dims) == format_axes(again.axes, a.dims)
    assert [a.reshape(rec).ok for rec in reshapes] == [False, True, True, False, True]
    assert [d.rule for d in t.diagnostics].count("reshape-jumble") == 2


def test_a_trace_without_softmax_has_no_attentions_and_builds_no_graph():
    with st.trace(dims={"B": 2, "T": 10}) as t:
        x = torch.randn(2, 10)
        (x @ x.T).sum()
    a = analyse(t)
    assert a.attentions == []
    assert "graph" not in vars(a)


@pytest.mark.parametrize("left, right, fires", [
    pytest.param((7, 1, 4, 5), (7, 1, 5, 6), False, id="one-batch"),
    pytest.param((7, 2, 3, 4), (7, 1, 4, 5), True, id="a-matrix-missing"),
])
def test_matmul_broadcast_is_read_past_its_first_exit(left, right, fires):
    with st.trace() as t:
        torch.rand(*left) @ torch.rand(*right)
    found = [d for d in t.diagnostics if d.rule == "silent-broadcast"]
    assert bool(found) is fires


class _Scaled(nn.Module):
    """q.k scaled by ``factor``: on the scores, or on both q and k (``where``)."""

    def __init__(self, factor: float, where: str):
        super().__init__()
        self.q = nn.Linear(32, 32)
        self.k = nn.Linear(32, 32)
        self.v = nn.Linear(32, 32)
        self.factor, self.where = factor, where

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.where == "q and k":
            q, k = q * self.factor, k * self.factor
        scores = q @ k.transpose(-2, -1)
        if self.where == "scores":
            scores = scores * self.factor
        return torch.softmax(scores, dim=-1) @ v


@pytest.mark.parametrize("factor, where, fires", [
    pytest.param(32 ** -0.5, "scores", False, id="right-on-the-scores"),
    pytest.param(32 ** -0.25, "q and k", False, id="right-over-q-and-k"),
    pytest.param(1 / 32, "scores", True, id="by-d"),
    pytest.param(32 ** -0.5, "q and k", True, id="twice"),
    pytest.param(1.0, "nowhere", True, id="unscaled"),
])
def test_a_right_total_scale_is_quiet_and_a_wrong_one_is_not(factor, where, fires):
    model = _Scaled(factor, where).eval()
    with torch.no_grad(), st.trace(model, dims={"B": 2, "T": 10, "C": 32}) as t:
        model(torch.randn(2, 10, 32))
    found = [d for d in t.diagnostics if d.rule == "attention-scale"]
    assert bool(found) is fires, [d.message for d in found]


class _Discards(nn.Module):
    def __init__(self, fail: bool):
        super().__init__()
        self.fail = fail

    def forward(self, x):
        x.masked_fill(x > 0, 0.0)
        y = x * 2
        if self.fail:
            return x.view(3, 7)
        return x


@pytest.mark.parametrize("fail, kinds", [
    pytest.param(False, ["alone", "dead"], id="runs-through"),
    pytest.param(True, ["alone"], id="fails-after"),
])
def test_discarded_results_before_a_failure(fail, kinds):
    with st.trace(_Discards(fail), dims={"B": 2, "T": 10}) as t:
        try:
            t.model(torch.randn(2, 10))
        except RuntimeError:
            pass
    found = [d for d in t.diagnostics if d.rule == "discarded-result"]
    assert [d.data["statement"] for d in found] == kinds
