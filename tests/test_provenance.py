"""Named axes: every traced shape reads as (B, T, C), (B, H, T, d), (B*H, T, d) ..."""

from __future__ import annotations

import types

import einops
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace
from models_basic import B, C, MHA, T, V, H, d, line_of
from shapetrace.base.dims import Dims
from shapetrace.naming.axes import format_axes, fresh_axes


def _tensors():
    g = torch.Generator().manual_seed(0)
    return types.SimpleNamespace(
        x=torch.randn(B, T, C, generator=g),
        qkv=torch.randn(B, T, 3 * C, generator=g),
        q=torch.randn(B, H, T, d, generator=g),
        att=torch.randn(B, H, T, T, generator=g),
        stacked=torch.randn(3, B, H, T, d, generator=g),
        w=torch.randn(3 * C, C, generator=g),
        wte=torch.randn(V, C, generator=g),
        idx=torch.randint(0, V, (B, T), generator=g),
        mask=torch.ones(T, T, dtype=torch.bool).tril(),
        linear=nn.Linear(C, C),
        embedding=nn.Embedding(V, C),
        norm=nn.LayerNorm(C),
        dropout=nn.Dropout(0.1).eval(),
    )


def _shapes(t, metas) -> list[str]:
    return [t.shape_of(m) for m in metas]


def _rules(t, *names: str) -> list[str]:
    return [dg.rule for dg in t.diagnostics if dg.rule in names]


def _last(t, op: str):
    found = [r for r in t.records if r.op == op]
    assert found, f"no {op} among {[r.op for r in t.records]}"
    return found[-1]


# --- a nanoGPT attention, op by op -----------------------------------------------------------

@pytest.fixture(scope="module")
def mha_trace():
    model = MHA()
    with shapetrace.trace(model) as t:
        model(torch.randn(B, T, C))
    return t


@pytest.mark.parametrize("tag, op, inputs, outputs", [
    pytest.param("mha-qkv", "F.linear", ["(B, T, C)", "(3*C, C)", "(3*C,)"], ["(B, T, 3*C)"],
                 id="qkv-projection"),
    pytest.param("mha-qkv", "Tensor.split", ["(B, T, 3*C)"], ["(B, T, C)"] * 3, id="split"),
    pytest.param("mha-view", "Tensor.view", ["(B, T, C)"], ["(B, T, H, d)"], id="view-heads"),
    pytest.param("mha-transpose", "Tensor.transpose", ["(B, T, H, d)"], ["(B, H, T, d)"],
                 id="heads-before-time"),
    pytest.param("mha-scores", "Tensor.transpose", ["(B, H, T, d)"], ["(B, H, d, T)"],
                 id="key-transpose"),
    pytest.param("mha-scores", "Tensor.matmul", ["(B, H, T, d)", "(B, H, d, T)"], ["(B, H, T, T)"],
                 id="scores"),
    pytest.param("mha-mask", "Tensor.masked_fill", ["(B, H, T, T)", "(1, 1, T, T)"],
                 ["(B, H, T, T)"], id="mask"),
    pytest.param("mha-softmax", "F.softmax", ["(B, H, T, T)"], ["(B, H, T, T)"], id="softmax"),
    pytest.param("mha-values", "Tensor.matmul", ["(B, H, T, T)", "(B, H, T, d)"], ["(B, H, T, d)"],
                 id="weights-at-values"),
    pytest.param("mha-back", "Tensor.transpose", ["(B, H, T, d)"], ["(B, T, H, d)"],
                 id="transpose-back"),
    pytest.param("mha-merge", "Tensor.view", ["(B, T, H, d)"], ["(B, T, C)"], id="merge-heads"),
    pytest.param("mha-proj", "F.linear", ["(B, T, C)", "(C, C)", "(C,)"], ["(B, T, C)"],
                 id="output-projection"),
])
def test_nanogpt_attention_shapes_are_named(mha_trace, tag, op, inputs, outputs):
    line = line_of(tag)
    recs = [r for r in mha_trace.records if r.line == line and r.op == op]
    assert recs, [(r.op, r.line) for r in mha_trace.records]
    rec = recs[-1]
    assert _shapes(mha_trace, rec.inputs) == inputs
    assert _shapes(mha_trace, rec.outputs) == outputs


def test_nanogpt_attention_has_no_findings(mha_trace):
    assert [d.rule for d in mha_trace.diagnostics] == []


# --- one case per op family -------------------------------------------------------------------

def case(id_, fn, op, *outputs):
    return pytest.param(fn, op, list(outputs), id=id_)


OP_FAMILIES = [
    # projections
    case("F.linear", lambda n: F.linear(n.x, n.w), "F.linear", "(B, T, 3*C)"),
    case("nn.Linear", lambda n: n.linear(n.x), "F.linear", "(B, T, C)"),
    # reshapes
    case("view", lambda n: n.x.view(B, T, H, d), "Tensor.view", "(B, T, H, d)"),
    case("view-minus-one", lambda n: n.x.view(B, T, H, -1), "Tensor.view", "(B, T, H, d)"),
    case("view-torch-size", lambda n: n.q.view(n.q.shape), "Tensor.view", "(B, H, T, d)"),
    case("reshape-merge", lambda n: n.q.transpose(1, 2).reshape(B, T, C), "Tensor.reshape",
         "(B, T, C)"),
    case("reshape-fold-batch", lambda n: n.q.reshape(B * H, T, d), "Tensor.reshape",
         "(B*H, T, d)"),
    case("torch.reshape", lambda n: torch.reshape(n.x, (B * T, C)), "torch.reshape", "(B*T, C)"),
    case("flatten-last", lambda n: n.x.view(B, T, H, d).flatten(2), "Tensor.flatten", "(B, T, C)"),
    case("flatten-first", lambda n: n.x.view(B, T, H, d).flatten(0, 1), "Tensor.flatten",
         "(B*T, H, d)"),
    case("unflatten", lambda n: n.x.unflatten(-1, (H, d)), "Tensor.unflatten", "(B, T, H, d)"),
    case("unflatten-fused", lambda n: n.qkv.unflatten(-1, (3, H, d)), "Tensor.unflatten",
         "(B, T, 3, H, d)"),
    case("view-as", lambda n: n.q.transpose(1, 2).reshape(B, T, C).view_as(n.x), "Tensor.view_as",
         "(B, T, C)"),
    # splitting and joining
    case("split", lambda n: n.qkv.split(C, dim=2), "Tensor.split", *["(B, T, C)"] * 3),
    case("chunk", lambda n: n.qkv.chunk(3, dim=-1), "Tensor.chunk", *["(B, T, C)"] * 3),
    case("split-heads-by-chunk", lambda n: n.x.chunk(H, dim=-1), "Tensor.chunk",
         *["(B, T, d)"] * H),
    case("unbind", lambda n: n.stacked.unbind(0), "Tensor.unbind", *["(B, H, T, d)"] * 3),
    case("cat-heads", lambda n: torch.cat(n.x.view(B, T, H, d).unbind(2), dim=-1), "torch.cat",
         "(B, T, C)"),
    case("cat-time", lambda n: torch.cat([n.x, n.x], dim=1), "torch.cat", "(B, 2*T, C)"),
    case("stack", lambda n: torch.stack([n.q, n.q, n.q]), "torch.stack", "(3, B, H, T, d)"),
    case("stack-middle", lambda n: torch.stack([n.x, n.x], dim=-2), "torch.stack",
         "(B, T, 2, C)"),
    # moving axes
    case("transpose", lambda n: n.q.transpose(1, 2), "Tensor.transpose", "(B, T, H, d)"),
    case("transpose-negative", lambda n: n.q.transpose(-2, -1), "Tensor.transpose",
         "(B, H, d, T)"),
    case("torch.transpose", lambda n: torch.transpose(n.x, 0, 1), "torch.transpose",
         "(T, B, C)"),
    case("permute", lambda n: n.stacked.permute(1, 3, 0, 2, 4), "Tensor.permute",
         "(B, T, 3, H, d)"),
    case("permute-tuple", lambda n: n.q.permute((0, 2, 1, 3)), "Tensor.permute", "(B, T, H, d)"),
    case(".T-on-matrix", lambda n: n.x[0].T, "Tensor.T", "(C, T)"),
    case(".t()", lambda n: n.w.t(), "Tensor.t", "(C, 3*C)"),
    case(".mT", lambda n: n.q.mT, "Tensor.mT", "(B, H, d, T)"),
    case("movedim", lambda n: n.q.movedim(1, 2), "Tensor.movedim", "(B, T, H, d)"),
    # size-1 axes and broadcasting views
    case("unsqueeze", lambda n: n.x.unsqueeze(1), "Tensor.unsqueeze", "(B, 1, T, C)"),
    case("squeeze", lambda n: n.x.unsqueeze(1).squeeze(1), "Tensor.squeeze", "(B, T, C)"),
    case("expand", lambda n: n.x[:, None].expand(B, H, T, C), "Tensor.expand", "(B, H, T, C)"),
    case("expand-minus-one", lambda n: n.x[:, None].expand(-1, H, -1, -1), "Tensor.expand",
         "(B, H, T, C)"),
    case("repeat", lambda n: n.x.repeat(1, 2, 1), "Tensor.repeat", "(B, 2*T, C)"),
    case("repeat-interleave", lambda n: n.q.repeat_interleave(3, dim=1),
         "Tensor.repeat_interleave", "(B, H*3, T, d)"),
    # indexing and slicing
    case("index-last-token", lambda n: n.x[:, -1], "[]", "(B, C)"),
    case("slice-whole", lambda n: n.x[:, :T], "[]", "(B, T, C)"),
    case("slice-part", lambda n: n.x[:, 1:4], "[]", "(B, 3, C)"),
    case("index-none", lambda n: n.x[:, :, None], "[]", "(B, T, 1, C)"),
    case("index-ellipsis", lambda n: n.q[..., 0], "[]", "(B, H, T)"),
    case("index-mask-buffer", lambda n: n.mask[None, None, :T, :T], "[]", "(1, 1, T, T)"),
    # products
    case("matmul-scores", lambda n: n.q @ n.q.transpose(-2, -1), "Tensor.matmul", "(B, H, T, T)"),
    case("matmul-values", lambda n: n.att @ n.q, "Tensor.matmul", "(B, H, T, d)"),
    case("torch.matmul", lambda n: torch.matmul(n.att, n.q), "torch.matmul", "(B, H, T, d)"),
    case("bmm", lambda n: torch.bmm(n.q.reshape(B * H, T, d), n.q.reshape(B * H, T, d).mT),
         "torch.bmm", "(B*H, T, T)"),
    case("einsum-scores", lambda n: torch.einsum("bhtd,bhsd->bhts", n.q, n.q), "torch.einsum",
         "(B, H, T, T)"),
    case("einsum-to-btHd", lambda n: torch.einsum("bhts,bhsd->bthd", n.att, n.q), "torch.einsum",
         "(B, T, H, d)"),
    case("einsum-ellipsis", lambda n: torch.einsum("...td,...sd->...ts", n.q, n.q),
         "torch.einsum", "(B, H, T, T)"),
    # elementwise, with broadcasting
    case("add-bias", lambda n: n.x + torch.ones(C), "Tensor.add", "(B, T, C)"),
    case("mul-per-batch", lambda n: n.q * torch.ones(B, 1, 1, 1), "Tensor.mul", "(B, H, T, d)"),
    case("scalar-divide", lambda n: n.att / 8.0, "Tensor.div", "(B, H, T, T)"),
    case("residual", lambda n: n.x + n.linear(n.x), "Tensor.add", "(B, T, C)"),
    case("gelu", lambda n: F.gelu(n.x), "F.gelu", "(B, T, C)"),
    case("compare", lambda n: n.mask[:T, :T] == 0, "==", "(T, T)"),
    # softmax and reductions
    case("softmax", lambda n: F.softmax(n.att, dim=-1), "F.softmax", "(B, H, T, T)"),
    case("softmax-method", lambda n: n.att.softmax(-1), "Tensor.softmax", "(B, H, T, T)"),
    case("sum-last", lambda n: n.x.sum(-1), "Tensor.sum", "(B, T)"),
    case("mean-keepdim", lambda n: n.x.mean(1, keepdim=True), "Tensor.mean", "(B, 1, C)"),
    case("max-values-and-indices", lambda n: n.att.max(dim=-1), "Tensor.max",
         "(B, H, T)", "(B, H, T)"),
    case("sum-everything", lambda n: n.x.sum(), "Tensor.sum", "()"),
    # masking
    case("masked_fill", lambda n: n.att.masked_fill(~n.mask, float("-inf")), "Tensor.masked_fill",
         "(B, H, T, T)"),
    case("masked_fill_", lambda n: n.att.clone().masked_fill_(~n.mask, 0.0), "Tensor.masked_fill_",
         "(B, H, T, T)"),
    case("where", lambda n: torch.where(n.mask, n.att, 0.0), "torch.where", "(B, H, T, T)"),
    # attention, embeddings, normalisation, dropout
    case("sdpa", lambda n: F.scaled_dot_product_attention(n.q, n.q, n.q, is_causal=True),
         "F.scaled_dot_product_attention", "(B, H, T, d)"),
    case("F.embedding", lambda n: F.embedding(n.idx, n.wte), "F.embedding", "(B, T, C)"),
    case("nn.Embedding", lambda n: n.embedding(n.idx), "F.embedding", "(B, T, C)"),
    case("F.layer_norm", lambda n: F.layer_norm(n.x, (C,)), "F.layer_norm", "(B, T, C)"),
    case("nn.LayerNorm", lambda n: n.norm(n.x), "F.layer_norm", "(B, T, C)"),
    case("F.dropout", lambda n: F.dropout(n.x, 0.1, training=False), "F.dropout", "(B, T, C)"),
    case("nn.Dropout-eval", lambda n: n.dropout(n.x), "F.dropout", "(B, T, C)"),
    # einops goes through the same ops
    case("einops-split", lambda n: einops.rearrange(n.x, "b t (h d) -> b h t d", h=H),
         "Tensor.permute", "(B, H, T, d)"),
    case("einops-merge", lambda n: einops.rearrange(n.q, "b h t d -> b t (h d)"),
         "Tensor.reshape", "(B, T, C)"),
]


@pytest.mark.parametrize("fn, op, outputs", OP_FAMILIES)
def test_op_family_output_shape(fn, op, outputs):
    n = _tensors()
    with shapetrace.trace() as t:
        fn(n)
    rec = _last(t, op)
    assert rec.error is None
    assert _shapes(t, rec.outputs) == outputs


def test_every_op_family_case_has_its_own_id():
    ids = [p.id for p in OP_FAMILIES]
    assert len(ids) == len(set(ids))


# --- ops shapetrace does not know name their outputs by size alone ----------------------------

def _heads_interleaved(x):
    """(B, T, C) whose C is laid out d-major: a legal merge, but no longer H*d."""
    return x.view(B, T, H, d).transpose(2, 3).reshape(B, T, C)


@pytest.mark.parametrize("unknown", [
    pytest.param(lambda y: F.pad(y, (0, 0)), id="F.pad"),
    pytest.param(lambda y: torch.fft.ifft(torch.fft.fft(y)).real, id="torch.fft"),
])
def test_unknown_op_gives_size_named_axes_and_claims_nothing(unknown):
    x = torch.randn(B, T, C)
    with shapetrace.trace() as known:
        y = _heads_interleaved(x)
        y.view(B, T, H, d)
    with shapetrace.trace() as t:
        y = unknown(_heads_interleaved(x))
        y.view(B, T, H, d)
    # with provenance: the merged axis is d*H, and splitting it as (H, d) is a jumble
    assert known.shape_of(_last(known, "Tensor.reshape").outputs[0]) == "(B, T, d*H)"
    assert _rules(known, "reshape-jumble") == ["reshape-jumble"]
    # after an op with no known propagation, axes are named by size only
    view = _last(t, "Tensor.view")
    assert t.shape_of(view.inputs[0]) == "(B, T, C)"
    assert view.inputs[0].axes == fresh_axes((B, T, C), t.dims)
    assert t.shape_of(view.outputs[0]) == "(B, T, H, d)"
    assert _rules(t, "reshape-jumble") == []


def test_unknown_op_output_is_size_named_even_when_shape_changes():
    with shapetrace.trace() as t:
        F.pad(torch.randn(B, T, C), (0, 1))
    assert t.shape_of(t.records[-1].outputs[0]) == "(B, T, 144)"


# --- formatting and probe sizes ---------------------------------------------------------------

@pytest.mark.parametrize("axes, dims, text", [
    pytest.param(((( 5, "B"),), ((7, "T"),), ((11, "H"), (13, "d"))), None, "(B, T, C)",
                 id="H*d-reads-as-C"),
    pytest.param((((13, "d"), (11, "H")),), None, "(d*H,)", id="d*H-stays-d*H"),
    pytest.param((((5, "B"), (11, "H")), ((7, "T"),)), None, "(B*H, T)", id="merged-batch"),
    pytest.param(((), ((7, "T"),)), None, "(1, T)", id="size-one"),
    pytest.param((), None, "()", id="scalar"),
    pytest.param((((11, "H"), (13, "d")),), {"C": 100}, "(H*d,)", id="explicit-C-not-collapsed"),
])
def test_format_axes(axes, dims, text):
    assert format_axes(axes, Dims(dims)) == text


@pytest.mark.parametrize("dims, shape, text", [
    pytest.param(None, (B, T, 3 * C), "(B, T, 3*C)", id="fused-qkv"),
    pytest.param(None, (B * H, T, d), "(B*H, T, d)", id="batch-times-heads"),
    pytest.param(None, (B, T, 144), "(B, T, 144)", id="unexplained-size"),
    pytest.param({"d": 8}, (B, T, 88), "(B, T, C)", id="d-overridden"),
    pytest.param({"K": 29}, (B, 29, T), "(B, K, T)", id="user-added-name"),
])
def test_fresh_axes_are_named_from_probe_sizes(dims, shape, text):
    dims = Dims(dims)
    assert format_axes(fresh_axes(shape, dims), dims) == text


def test_trace_dims_override_names_the_axes():
    x = torch.randn(B, T, 11 * 8)
    with shapetrace.trace(dims={"d": 8}) as t:
        x.view(B, T, H, 8).transpose(1, 2)
    assert _shapes(t, t.records[-1].outputs) == ["(B, H, T, d)"]
