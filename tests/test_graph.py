"""The dataflow graph on small traces: axis positions through ops, and the attentions found."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import shapetrace
from shapetrace.analysis.facts import Analysis, analyse
from shapetrace.analysis.graph import (
    backward_positions, contracted_positions, contracted_size, forward_position, output_roles,
    reshape_position,
)

B, T, H, d = 5, 7, 11, 13
C = H * d


def traced(fn, *inputs) -> Analysis:
    with shapetrace.trace(rules=False) as t:
        fn(*inputs)
    return analyse(t)


def only(analysis: Analysis, op: str):
    (rec,) = analysis.by_op[op]
    return rec


# --- positions through ops ----------------------------------------------------------------------

@pytest.mark.parametrize("pos, expected", [
    pytest.param(0, 0, id="batch-stays"),
    pytest.param(1, 2, id="heads-move-right"),
    pytest.param(2, 1, id="time-moves-left"),
    pytest.param(3, 3, id="head-size-stays"),
])
def test_transpose_moves_positions_both_ways(pos, expected):
    a = traced(lambda x: x.transpose(1, 2), torch.randn(B, H, T, d))
    rec = only(a, "Tensor.transpose")
    assert forward_position(rec, 0, pos) == expected
    assert backward_positions(rec, expected) == [(0, pos)]


@pytest.mark.parametrize("src, dst, pos, expected", [
    pytest.param((B, T, C), (B, T, H, d), 1, 1, id="split-keeps-time"),
    pytest.param((B, T, C), (B, T, H, d), 2, None, id="split-axis-is-not-whole"),
    pytest.param((B, T, H, d), (B, T, C), 0, 0, id="merge-keeps-batch"),
    pytest.param((B, H, T, d), (B * H, T, d), 2, 1, id="merge-batch-heads-keeps-time"),
    pytest.param((B, 1, T), (B, T), 1, None, id="size-one-axis-has-no-position"),
])
def test_reshape_position(src, dst, pos, expected):
    assert reshape_position(src, dst, pos) == expected


def test_view_carries_positions_of_whole_axes():
    a = traced(lambda x: x.view(B, T, H, d), torch.randn(B, T, C))
    rec = only(a, "Tensor.view")
    assert forward_position(rec, 0, 1) == 1
    assert forward_position(rec, 0, 2) is None
    assert backward_positions(rec, 3) == []


def test_masked_fill_carries_the_scores_not_the_mask():
    scores = torch.randn(B, H, T, T)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    a = traced(lambda s, m: s.masked_fill(m, float("-inf")), scores, mask)
    rec = only(a, "Tensor.masked_fill")
    assert forward_position(rec, 0, 3) == 3
    assert forward_position(rec, 1, 1) is None  # the mask is not carried
    assert backward_positions(rec, 2) == [(0, 2)]


def test_broadcast_operand_is_followed_after_the_full_one():
    a = traced(lambda s, bias: s + bias, torch.randn(B, H, T, T), torch.randn(T, T))
    rec = only(a, "Tensor.add")
    assert backward_positions(rec, 3) == [(0, 3), (1, 1)]
    assert forward_position(rec, 1, 0) == 2


# --- the roles of axes at products --------------------------------------------------------------

def test_matmul_roles_and_contracted_axes():
    a = traced(lambda q, k: q @ k.transpose(-2, -1), torch.randn(B, H, T, d), torch.randn(B, H, T, d))
    rec = only(a, "Tensor.matmul")
    assert output_roles(rec) == ["batch", "batch", "query", "key"]
    assert contracted_positions(rec, 0) == {3}
    assert contracted_positions(rec, 1) == {2}
    assert contracted_size(rec) == d


def test_einsum_roles_and_contracted_axes():
    a = traced(lambda q, k: torch.einsum("bqhd,bkhd->bhqk", q, k),
               torch.randn(B, T, H, d), torch.randn(B, T, H, d))
    rec = only(a, "torch.einsum")
    assert output_roles(rec) == ["batch", "batch", "query", "key"]
    assert contracted_positions(rec, 0) == {3}
    assert contracted_size(rec) == d


# --- finding attentions -------------------------------------------------------------------------

def mha(x, w_qkv):
    q, k, v = (x @ w_qkv).split(C, dim=-1)
    q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    att = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return (att @ v).transpose(1, 2).reshape(B, T, C)


def einsum_attention(x, wq, wk, wv):
    q = (x @ wq).view(B, T, H, d)
    k = (x @ wk).view(B, T, H, d)
    v = (x @ wv).view(B, T, H, d)
    att = torch.einsum("bqhd,bkhd->bhqk", q, k).mul(d ** -0.5).softmax(dim=-1)
    return torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(B, T, C)


def fused_qkv(x, w):
    qkv = (x @ w).view(B, T, 3, H, d).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    att = (q @ k.transpose(-2, -1) * d ** -0.5).softmax(-1)
    return (att @ v).transpose(1, 2).reshape(B, T, C)


def test_plain_mha_attention_is_found():
    a = traced(mha, torch.randn(B, T, C), torch.randn(C, 3 * C))
    (att,) = a.attentions
    assert att.softmax.op == "F.softmax" and att.dim == 3 and not att.implicit
    (use,) = att.uses
    assert use.slot == 0 and use.pos == 3
    assert contracted_positions(use.matmul, use.slot) == {3}
    assert att.scores is not None
    assert output_roles(att.scores.rec)[att.scores.pos] == "key"
    assert [r.op for r in att.scores.path] == ["Tensor.div", "Tensor.masked_fill"]


def test_einsum_attention_is_found():
    x = torch.randn(B, T, C)
    a = traced(einsum_attention, x, *(torch.randn(C, C) for _ in range(3)))
    (att,) = a.attentions
    (use,) = att.uses
    assert use.matmul.op == "torch.einsum"
    assert use.pos in contracted_positions(use.matmul, use.slot)
    assert att.scores.rec.op == "torch.einsum"
    assert output_roles(att.scores.rec)[att.scores.pos] == "key"


def test_fused_qkv_attention_is_found():
    a = traced(fused_qkv, torch.randn(B, T, C), torch.randn(C, 3 * C))
    (att,) = a.attentions
    assert att.softmax.op == "Tensor.softmax"
    (use,) = att.uses
    assert use.pos in contracted_positions(use.matmul, use.slot)
    assert output_roles(att.scores.rec)[att.scores.pos] == "key"
    assert contracted_size(att.scores.rec) == d


def test_a_softmax_that_no_product_contracts_is_no_attention():
    a = traced(lambda x: F.softmax(x, dim=-1).sum(), torch.randn(B, T, C))
    assert a.attentions == []


# --- the graph itself ---------------------------------------------------------------------------

def test_consumers_and_producer():
    a = traced(lambda x: (x.transpose(0, 1) + 1).sum(), torch.randn(B, T))
    transpose = only(a, "Tensor.transpose")
    (consumer, slot), = a.graph.consumers[(transpose.index, 0)]
    assert consumer.op == "Tensor.add" and slot == 0
    assert a.graph.producer(consumer.inputs[0]) is transpose
    assert a.graph.producer(transpose.inputs[0]) is None  # came from outside the trace


def test_analysis_is_built_once():
    a = traced(mha, torch.randn(B, T, C), torch.randn(C, 3 * C))
    assert a.graph is a.graph
    assert a.attentions is a.attentions
    view = a.by_op["Tensor.view"][0]
    assert a.reshape(view) is a.reshape(view) and a.reshape(view).ok
    assert a.records_of(["Tensor.view", "F.softmax"]) == sorted(
        a.by_op["Tensor.view"] + a.by_op["F.softmax"], key=lambda r: r.index)
    assert a.shape_of(view.outputs[0]) == "(B, T, H, d)"


def test_lineage():
    def fn(x):
        pos = torch.arange(T).float()
        return x + pos, pos[:, None] - pos[None, :]
    a = traced(fn, torch.randn(B, T))
    add = only(a, "Tensor.add")
    assert a.lineage.constant(add.inputs[1])
    assert not a.lineage.constant(add.inputs[0])
    assert a.lineage.batched(add.outputs[0])
    assert not a.lineage.batched(add.inputs[1])
