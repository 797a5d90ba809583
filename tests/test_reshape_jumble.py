"""reshape-jumble: flags reshapes that regroup axes out of order, accepts every legal idiom."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shapetrace
from models_basic import (B, C, FILE, MHA, T, EinopsRoundTrip, FoldHeadsIntoBatch, FusedPermute,
                          GroupedQueryAttention, H, MergeWithoutTranspose, SDPAttention,
                          SeqFirstView, TorchMHA, Transpose13Merge, TransposeReshape, ViewJumble,
                          d, line_of)
from shapetrace.frontends.demo import CausalSelfAttention
from shapetrace.base.dims import Dims
from shapetrace.naming.reshapes import reshape_axes
from shapetrace.naming.axes import fresh_axes

GQA_DIMS = {"H": 6, "K": 2, "G": 3}  # n_head = n_kv_head * n_rep = K * G
GQA_C = 6 * d


def _trace(model, *inputs, dims=None):
    with shapetrace.trace(model, dims=dims) as t:
        model(*inputs)
    return t


def _jumbles(t):
    return [dg for dg in t.diagnostics if dg.rule == "reshape-jumble"]


# --- buggy reshapes are flagged at their line, with a hint ------------------------------------

@pytest.mark.parametrize("model, shape, tag, op, message, hint", [
    pytest.param(ViewJumble(), (B, T, C), "view-jumble", "Tensor.view",
                 "view (B, T, C) -> (B, H, T, d)",
                 "Split with .view(B, T, H, d), then .transpose(1, 2).",
                 id="btc-to-bhtd"),
    pytest.param(MergeWithoutTranspose(), (B, T, C), "merge-jumble", "Tensor.reshape",
                 "reshape (B, H, T, d) -> (B, T, C)",
                 "Move the axes first: .transpose(1, 2), then .reshape(B, T, C).",
                 id="merge-without-transpose"),
    pytest.param(SeqFirstView(), (B, T, C), "seq-first-jumble", "Tensor.view",
                 "view (B, T, C) -> (T, B, C)",
                 "Reorder axes with .transpose(0, 1) instead: a view cannot move axes.",
                 id="btc-to-tbc-by-view"),
    pytest.param(Transpose13Merge(), (B, H, T, d), "transpose13-jumble", "Tensor.reshape",
                 "reshape (B, d, T, H) -> (B, T, C)",
                 "Move the axes first: .permute(0, 2, 3, 1), then .reshape(B, T, C).",
                 id="transpose-1-3-before-merge"),
])
def test_jumble_is_flagged_at_its_line(model, shape, tag, op, message, hint):
    t = _trace(model, torch.randn(*shape))
    found = _jumbles(t)
    assert len(found) == 1, [dg.message for dg in found]
    dg = found[0]
    assert (dg.severity, dg.code, dg.op, dg.module) == ("error", "ST001", op, type(model).__name__)
    assert Path(dg.file).resolve() == FILE
    assert dg.line == line_of(tag)
    assert dg.message.startswith(message)
    assert "only split or merge neighbouring axes" in dg.message
    advice, _, fixed = dg.hint.partition(f": {dg.line}  ")
    assert advice + "." == hint, dg.hint
    assert fixed, f"no corrected line in the hint: {dg.hint}"  # the line itself: tests/test_fixes.py


def test_demo_bug_found_through_check():
    from shapetrace.frontends.demo import JumbledSelfAttention

    report = shapetrace.check(JumbledSelfAttention, init={"n_embd": "C", "n_head": "H"},
                              inputs=["x=B,T,C"])
    assert not report.ok
    jumbles = [dg for dg in report.diagnostics if dg.rule == "reshape-jumble"]
    assert [dg.message.split(" mixes")[0] for dg in jumbles] == \
        ["reshape (B, T, C) -> (B, H, T, d)", "reshape (B, H, T, d) -> (B, T, C)"]
    assert len(jumbles[0].lines) == 3  # q, k and v: one mistake on three sibling lines


def test_failed_view_that_is_also_a_jumble_is_reported_as_a_jumble():
    """A view that raises because the tensor is non-contiguous, but is a jumble anyway."""
    y = torch.randn(B, H, T, d).transpose(1, 2)  # (B, T, H, d), not contiguous
    with pytest.raises(RuntimeError):
        with shapetrace.trace() as t:
            y.view(B, H, T, d)
    assert [dg.rule for dg in t.diagnostics] == ["reshape-jumble"]


@pytest.mark.parametrize("fn, shape", [
    pytest.param(lambda x: x.view(torch.uint8), "(B, T, 4*C)", id="view-as-bytes"),
    pytest.param(lambda x: x.view(torch.int32), "(B, T, C)", id="view-as-same-size-dtype"),
    pytest.param(lambda x: x[:, :0].view(B, 0, H, d), "(B, 0, H, d)", id="empty-split"),
    pytest.param(lambda x: x[:, :0].reshape(B, H, 0, d), "(B, H, 0, d)", id="empty-any-order"),
])
def test_views_that_move_no_elements_are_not_jumbles(fn, shape):
    """A dtype view reinterprets bytes and an empty tensor has no layout: nothing to flag."""
    x = torch.randn(B, T, C)
    with shapetrace.trace() as t:
        fn(x)
    assert t.shape_of(t.records[-1].outputs[0]) == shape
    assert _jumbles(t) == []


# --- legal idioms are accepted --------------------------------------------------------------

def _seq_first():
    return torch.randn(T, B, C)


@pytest.mark.parametrize("model, inputs, dims", [
    pytest.param(MHA(), [(B, T, C)], None, id="nanogpt"),
    pytest.param(CausalSelfAttention(C, H), [(B, T, C)], None, id="demo-correct"),
    pytest.param(FusedPermute(), [(B, T, C)], None, id="fused-qkv-permute-2-0-3-1-4"),
    pytest.param(GroupedQueryAttention(GQA_C, 6, 2), [(B, T, GQA_C)], GQA_DIMS,
                 id="gqa-expand-reshape"),
    pytest.param(GroupedQueryAttention(GQA_C, 6, 2), [(B, T, GQA_C)], {"H": 6},
                 id="gqa-unnamed-groups"),
    pytest.param(TorchMHA(batch_first=False), [(T, B, C)], None, id="nn-mha-seq-first"),
    pytest.param(TorchMHA(batch_first=True), [(B, T, C)], None, id="nn-mha-batch-first"),
    pytest.param(EinopsRoundTrip(), [(B, T, C)], None, id="einops-rearrange-and-back"),
    pytest.param(SDPAttention(), [(B, T, C)], None, id="einops-fused-sdpa"),
    pytest.param(FoldHeadsIntoBatch(), [(B, H, T, d)] * 3, None, id="bhtd-to-bh-t-d"),
    pytest.param(TransposeReshape(), [(B, H, T, d)], None, id="transpose-then-reshape"),
])
def test_legal_reshapes_are_not_flagged(model, inputs, dims):
    t = _trace(model, *(torch.randn(*s) for s in inputs), dims=dims)
    reshapes = [r for r in t.records if r.op in ("Tensor.view", "Tensor.reshape", "Tensor.flatten",
                                                 "Tensor.unflatten", "torch.reshape")]
    assert reshapes  # the idiom really went through a reshape
    assert _jumbles(t) == []


@pytest.mark.parametrize("dims, merged", [
    pytest.param(GQA_DIMS, "(B, K*G, T, d)", id="named-groups"),
    pytest.param({"H": 6}, "(B, 2*3, T, d)", id="unnamed-groups"),
])
def test_gqa_heads_read_as_kv_heads_times_repeats(dims, merged):
    """Dims names sizes, not relations: the merged axis reads K*G, not H, even though H = K*G."""
    t = _trace(GroupedQueryAttention(GQA_C, 6, 2), torch.randn(B, T, GQA_C), dims=dims)
    rec = next(r for r in t.records if r.line == line_of("gqa-k") and r.op == "Tensor.reshape")
    assert t.shape_of(rec.outputs[0]) == merged


@pytest.mark.parametrize("batch_first, view", [
    pytest.param(False, "(T, B, C) -> (T, B*H, d)", id="seq-first"),
    pytest.param(True, "(T, B, C) -> (T, B*H, d)", id="batch-first"),
])
def test_nn_mha_folds_heads_into_batch_after_time(batch_first, view):
    x = torch.randn(B, T, C) if batch_first else torch.randn(T, B, C)
    t = _trace(TorchMHA(batch_first=batch_first), x)
    views = {f"{t.shape_of(r.inputs[0])} -> {t.shape_of(r.outputs[0])}"
             for r in t.records if r.op == "Tensor.view"}
    assert view in views


# --- reshape_axes on factor tuples ------------------------------------------------------------

DIMS = Dims()


def _axes(*groups):
    return tuple(tuple((s, DIMS.label(s)) for s in group) for group in groups)


@pytest.mark.parametrize("axes, shape, ok, result", [
    pytest.param(_axes((B,), (T,), (C,)), (B, T, H, d), True, _axes((B,), (T,), (H,), (d,)),
                 id="split-C-into-H-d"),
    pytest.param(_axes((B,), (H,), (T,), (d,)), (B * H, T, d), True, _axes((B, H), (T,), (d,)),
                 id="merge-B-H"),
    pytest.param(_axes((B,), (T,), (H,), (d,)), (B, T, C), True, _axes((B,), (T,), (H, d)),
                 id="merge-H-d"),
    pytest.param(_axes((B,), (T,), (C,)), (B, 1, T, 1, C), True, _axes((B,), (), (T,), (), (C,)),
                 id="insert-size-one"),
    pytest.param(_axes((B,), (T,), (3 * C,)), (B, T, 3, H, d), True,
                 _axes((B,), (T,), (3,), (H,), (d,)), id="split-fused-qkv"),
    pytest.param(_axes((B,), (T,), (C,)), (B, H, T, d), False, None, id="jumble-B-H-T-d"),
    pytest.param(_axes((B,), (H,), (T,), (d,)), (B, T, C), False, None, id="jumble-merge"),
    pytest.param(_axes((B,), (T,), (C,)), (T, B, C), False, None, id="jumble-swap"),
    pytest.param(_axes((B,), (T,), (d, H)), (B, T, H, d), False, None, id="d-major-split-as-H-d"),
])
def test_reshape_axes(axes, shape, ok, result):
    check = reshape_axes(axes, shape, DIMS)
    assert check.ok is ok
    if ok:
        assert check.axes == result
    else:
        assert check.axes == fresh_axes(shape, DIMS)
        assert check.bad_axis is not None


# --- properties: legal chains never flagged, jumbles always flagged ---------------------------

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23)


@st.composite
def groupings(draw, items):
    """``items`` cut into consecutive, non-empty groups."""
    items = list(items)
    cuts = draw(st.sets(st.integers(1, len(items) - 1))) if len(items) > 1 else set()
    bounds = [0, *sorted(cuts), len(items)]
    return [tuple(items[a:b]) for a, b in zip(bounds, bounds[1:])]


@st.composite
def layouts(draw, primes=PRIMES, min_factors=2, max_factors=6):
    """Axes made of distinct prime factors (so sizes identify factors), in random groups."""
    sizes = draw(st.lists(st.sampled_from(primes), min_size=min_factors,
                          max_size=min(max_factors, len(primes)), unique=True))
    return tuple(draw(groupings([(s, DIMS.label(s)) for s in sizes])))


def _flat(axes):
    return [f for axis in axes for f in axis]


def _in_order(groups, flat) -> bool:
    """Whether the groups, each read in the tensor's order, are the flat factors in order."""
    position = {f: i for i, f in enumerate(flat)}
    return [f for g in groups for f in sorted(g, key=position.get)] == flat


def _shape(groups):
    return tuple(math.prod(s for s, _ in g) for g in groups)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), axes=layouts())
def test_property_legal_chains_are_never_flagged(data, axes):
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        if data.draw(st.booleans(), label="permute"):
            order = data.draw(st.permutations(range(len(axes))), label="order")
            axes = tuple(axes[i] for i in order)  # moving axes is always legal
            continue
        groups = data.draw(groupings(_flat(axes)), label="regroup")
        ones = data.draw(st.lists(st.integers(0, len(groups)), max_size=2), label="ones")
        for at in sorted(ones, reverse=True):
            groups.insert(at, ())
        check = reshape_axes(axes, _shape(groups), DIMS)
        assert check.ok, (axes, groups)
        assert check.axes == tuple(groups)
        axes = check.axes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data(), axes=layouts())
def test_property_jumbles_are_always_flagged(data, axes):
    flat = _flat(axes)
    shuffled = data.draw(st.permutations(flat), label="factor order")
    groups = data.draw(groupings(shuffled), label="groups")
    if _in_order(groups, flat):
        return  # this draw happens to be a legal regrouping
    assert not reshape_axes(axes, _shape(groups), DIMS).ok


@settings(max_examples=300, deadline=None)
@given(data=st.data(), axes=layouts())
def test_property_reshape_is_legal_exactly_when_factors_stay_in_order(data, axes):
    flat = _flat(axes)
    groups = data.draw(groupings(data.draw(st.permutations(flat), label="factor order")))
    assert reshape_axes(axes, _shape(groups), DIMS).ok is _in_order(groups, flat)


# end to end: small real tensors through shapetrace.trace, sizes the named probe primes

NAMED = (DIMS["B"], DIMS["T"], DIMS["H"], DIMS["d"], DIMS["S"])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), sizes=st.lists(st.sampled_from(NAMED), min_size=2, max_size=4, unique=True),
       jumble=st.booleans())
def test_property_end_to_end(data, sizes, jumble):
    axes = [((s, DIMS.label(s)),) for s in sizes]
    x = torch.randn(*sizes)
    with shapetrace.trace(dims=DIMS) as t:
        y = x
        for _ in range(data.draw(st.integers(0, 4), label="steps")):
            if data.draw(st.booleans(), label="permute"):
                order = data.draw(st.permutations(range(len(axes))), label="order")
                y = y.permute(*order)
                axes = [axes[i] for i in order]
            else:
                groups = data.draw(groupings(_flat(axes)), label="regroup")
                y = y.reshape(_shape(groups))
                axes = groups
        flat = _flat(axes)
        if jumble:
            shuffled = data.draw(st.permutations(flat), label="jumbled order")
            groups = data.draw(groupings(shuffled), label="jumbled groups")
        else:
            groups = data.draw(groupings(flat), label="final groups")
        is_jumble = not _in_order(groups, flat)
        y.reshape(_shape(groups))
    last = t.records[-1]
    flagged = [dg.record for dg in t.diagnostics if dg.rule == "reshape-jumble"]
    assert flagged == ([last.index] if is_jumble else [])
    if not is_jumble:
        position = {f: i for i, f in enumerate(flat)}
        assert last.outputs[0].axes == tuple(tuple(sorted(g, key=position.get)) for g in groups)


@pytest.mark.parametrize("shape, jumbled", [
    pytest.param((2, 4, 16, 8), True, id="a-quarter-of-the-tokens-into-each-head"),
    pytest.param((2, 16, 4, 8), False, id="heads-split-off-the-width"),
    pytest.param((2, 4, 128), False, id="four-neighbouring-tokens-concatenated"),
    pytest.param((2, 4, 4, 32), False, id="tokens-in-chunks-of-four"),
])
def test_a_new_axis_made_of_parts_of_two_axes_is_a_jumble(shape, jumbled):
    """At the user's sizes T = 16 can be cut: (B, T, C) -> (B, 4, 16, 8) reads as T cut in
    four and a quarter of it joined with the heads cut from C. Parts of two axes in one new axis
    is a jumble; a part of one joined with the whole of another is a concatenation."""
    x = torch.randn(2, 16, 32)
    with shapetrace.trace(dims={"B": 2, "T": 16, "C": 32, "H": 4}) as t:
        x.reshape(*shape)
    assert any(d.rule == "reshape-jumble" for d in t.diagnostics) is jumbled
