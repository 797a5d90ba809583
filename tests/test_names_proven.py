"""Names at the user's sizes from what the code states: forward's jaxtyping annotations, the
traced model's declared inputs (``trace(model, inputs=[...])``), and ``check()`` given tensors.

A name is proven only when every source and every call gives it one size; otherwise the size
prints as its number.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor

import shapetrace
from shapetrace.base.errors import UsageError
from shapetrace.naming.hints import annotation_name, bind_tokens

sys.path.insert(0, str(Path(__file__).parent / "data" / "names"))
from student_mha import StudentMHA  # noqa: E402
from variants import AnnotatedMHA, AnonymousMHA  # noqa: E402


def _first_and_qkv(t) -> tuple[str, str]:
    linear = next(r for r in t.records if r.op == "F.linear")
    return t.shape_of(linear.inputs[0]), t.shape_of(linear.outputs[0])


def _trace(model, *shapes, **options):
    torch.manual_seed(0)
    with shapetrace.trace(model, **options) as t:
        for shape in shapes:
            model(torch.randn(*shape))
    return t


# --- reading annotations -------------------------------------------------------------------------

@pytest.mark.parametrize("token, name", [
    pytest.param("B", "B", id="own-name"),
    pytest.param("batch", "B", id="alias"),
    pytest.param("seq_len", "T", id="alias-seq"),
    pytest.param("C={self.n_embd}", "C", id="symbolic-with-label"),
    pytest.param("#T", "T", id="broadcastable"),
    pytest.param("D", "D", id="a-name-of-the-users-own"),
    pytest.param("3*C", None, id="expression"),
    pytest.param("*batch", None, id="variadic"),
    pytest.param("...", None, id="anonymous-variadic"),
    pytest.param("_", None, id="anonymous"),
    pytest.param("?T", None, id="may-vary"),
    pytest.param("64", None, id="fixed-size"),
])
def test_annotation_name(token, name):
    assert annotation_name(token) == name


@pytest.mark.parametrize("tokens, shape, bound", [
    pytest.param(["B", "T", "C"], (2, 10, 64), {"B": 2, "T": 10, "C": 64}, id="plain"),
    pytest.param(["*batch", "T", "C"], (3, 2, 10, 64), {"T": 10, "C": 64}, id="variadic-first"),
    pytest.param(["B", "...", "C"], (2, 4, 5, 64), {"B": 2, "C": 64}, id="variadic-middle"),
    pytest.param(["#*batch", "T", "C"], (3, 1, 10, 64), {"T": 10, "C": 64},
                 id="broadcastable-variadic"),
    pytest.param(["B", "T"], (2, 10, 64), None, id="too-many-axes"),
    pytest.param(["#B", "T"], (1, 10), {"T": 10}, id="broadcast-axis-of-1"),
    pytest.param(["B", "T", "C"], (2, 64), None, id="wrong-rank"),
    pytest.param(["T", "T"], (10, 9), None, id="violated"),
])
def test_bind_tokens(tokens, shape, bound):
    assert bind_tokens(tokens, shape) == bound


# --- trace() at the user's sizes -----------------------------------------------------------------

def test_annotation_names_batch_time_and_width():
    t = _trace(AnnotatedMHA(64, 4), (2, 10, 64))
    assert dict(t.dims) == {"B": 2, "T": 10, "C": 64}
    assert _first_and_qkv(t) == ("(B, T, C)", "(B, T, 3*C)")


#: an alias, which this file's ``from __future__ import annotations`` leaves as the string "Tokens"
Tokens = Float[Tensor, "batch seq dim"]


class AliasAnnotated(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(64, 192)

    def forward(self, x: Tokens) -> Tokens:
        return self.qkv(x)[..., :64]


def test_an_annotation_through_a_string_alias_names_sizes():
    t = _trace(AliasAnnotated(), (2, 10, 64))
    assert dict(t.dims) == {"B": 2, "T": 10, "C": 64}
    assert _first_and_qkv(t) == ("(B, T, C)", "(B, T, 3*C)")


class _Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(64, 192)

    def forward(self, x):
        return self.qkv(x)[..., :64]


def _annotated_forward(self, x: Float[Tensor, "B T C"]):
    return self.qkv(x)[..., :64]


def test_a_forward_replaced_between_traces_is_read_anew(monkeypatch):
    # a forward found to annotate nothing is remembered as such; the class's new forward is not
    assert len(_trace(_Plain(), (2, 10, 64)).dims) == 0
    monkeypatch.setattr(_Plain, "forward", _annotated_forward)
    t = _trace(_Plain(), (2, 10, 64))
    assert dict(t.dims) == {"B": 2, "T": 10, "C": 64}
    monkeypatch.undo()
    model = _Plain()

    def own(x: Float[Tensor, "B T C"]):  # an instance's own forward, beside the plain class's
        return _annotated_forward(model, x)

    model.forward = own
    assert dict(_trace(model, (2, 10, 64)).dims) == {"B": 2, "T": 10, "C": 64}


def test_without_annotation_nothing_is_named():
    t = _trace(AnonymousMHA(64, 4), (2, 10, 64))
    assert len(t.dims) == 0
    assert _first_and_qkv(t) == ("(2, 10, 64)", "(2, 10, 192)")


def test_a_name_given_two_sizes_by_two_calls_is_a_number():
    t = _trace(AnnotatedMHA(64, 4), (2, 10, 64), (2, 12, 64))
    assert dict(t.dims) == {"B": 2, "C": 64}
    assert _first_and_qkv(t) == ("(B, 10, C)", "(B, 10, 3*C)")


class _Narrow(nn.Module):
    """Calls its width C in the annotation, but stores n_embd = 32 (a different size)."""

    def __init__(self):
        super().__init__()
        self.n_embd = 32
        self.lin = nn.Linear(64, 64)

    def forward(self, x: Float[Tensor, "B T C"]):
        return self.lin(x)


def test_annotation_and_attribute_that_disagree_prove_nothing():
    t = _trace(_Narrow(), (2, 10, 64))
    assert "C" not in t.dims and dict(t.dims) == {"B": 2, "T": 10}
    assert _first_and_qkv(t)[0] == "(B, T, 64)"


def test_declared_sizes_win_over_annotations():
    t = _trace(AnnotatedMHA(64, 4), (2, 10, 64), dims={"B": 2, "T": 10, "C": 64, "H": 4})
    assert t.dims["d"] == 16
    view = next(r for r in t.records if r.op == "Tensor.view")
    assert t.shape_of(view.outputs[0]) == "(B, T, H, d)"


@pytest.mark.parametrize("inputs", [pytest.param(["x=B,T,C"], id="named"),
                                    pytest.param(["B,T,C"], id="dims-only")])
def test_declared_inputs_name_the_sizes_the_model_was_called_with(inputs):
    t = _trace(AnonymousMHA(64, 4), (2, 10, 64), inputs=inputs)
    assert dict(t.dims) == {"B": 2, "T": 10, "C": 64}
    assert _first_and_qkv(t) == ("(B, T, C)", "(B, T, 3*C)")


def test_declared_inputs_that_do_not_fit_prove_nothing():
    t = _trace(AnonymousMHA(64, 4), (2, 10, 64), inputs=["x=B,C"])
    assert len(t.dims) == 0


def test_declared_inputs_need_the_model():
    with pytest.raises(UsageError, match="pass the model too"):
        shapetrace.trace(inputs=["x=B,T,C"])


def test_inputs_at_probe_sizes_still_name_everything():
    t = _trace(AnonymousMHA(143, 11), (5, 7, 143), inputs=["x=B,T,C"])
    view = next(r for r in t.records if r.op == "Tensor.view")
    assert t.shape_of(view.outputs[0]) == "(B, T, H, d)"


# --- check() given the user's own tensors ---------------------------------------------------------

def test_check_given_tensors_names_them_as_trace_does():
    """The issue's example: T = 10 printed as 2*B, and a scale by sqrt(C) called 1/8."""
    model = StudentMHA(64, 8, scale_by_width=True)
    report = shapetrace.check(model, inputs=[torch.randn(2, 10, 64)])
    (result,) = report.targets
    shapes = [result.trace.shape_of(m) for r in result.trace.records for m in r.outputs]
    assert not [s for s in shapes if "B" in s or "T" in s], shapes  # neither is stated
    assert "(2, 10, C)" in shapes
    assert result.dims == {"C": 64, "H": 8, "d": 8}
    (scale,) = [d for d in result.diagnostics if d.rule == "attention-scale"]
    assert "1/8" not in scale.message and "0.125" in scale.message


def test_check_given_tensors_with_dims_names_them():
    model = StudentMHA(64, 8)
    report = shapetrace.check(model, inputs=[torch.randn(2, 10, 64)], dims={"B": 2, "T": 10})
    (result,) = report.targets
    first = result.trace.records[0]
    assert result.trace.shape_of(first.inputs[0]) == "(B, T, C)"


class _LeakyCausal(nn.Module):
    """Meant to be causal (``is_causal``) but unmasked, and it mixes the batch."""

    def __init__(self, width=64, heads=4):
        super().__init__()
        self.heads, self.is_causal = heads, True
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x: Float[Tensor, "batch seq C"]) -> Float[Tensor, "batch seq C"]:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=-1))
        att = (q @ k.transpose(-2, -1) / (C // self.heads) ** 0.5).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return y - y.mean(0)


class _UnannotatedLeaky(_LeakyCausal):
    def forward(self, x):
        return super().forward(x)


def _behaviour_of(result) -> dict[str, int]:
    return {d.rule: d.line for d in result.diagnostics if d.rule in ("batch-leak", "causal-leak")}


@pytest.mark.parametrize("model, dims", [
    pytest.param(_LeakyCausal(), None, id="annotated"),
    pytest.param(_UnannotatedLeaky(), {"B": 2, "T": 10}, id="dims-given"),
])
def test_check_given_tensors_checks_behaviour_at_their_sizes(model, dims):
    (result,) = shapetrace.check(model, inputs=[torch.randn(2, 10, 64)], dims=dims).targets
    source = inspect.getsource(_LeakyCausal.forward).splitlines()
    first = _LeakyCausal.forward.__code__.co_firstlineno
    softmax = first + next(i for i, line in enumerate(source) if "softmax" in line)
    mean = first + next(i for i, line in enumerate(source) if "mean(0)" in line)
    assert _behaviour_of(result) == {"causal-leak": softmax, "batch-leak": mean}
    assert "sample 0" in next(d.message for d in result.diagnostics if d.rule == "batch-leak")


def test_check_given_tensors_with_nothing_naming_the_batch_checks_no_behaviour():
    """(2, 10, 64) could be batch-first or time-first: nothing says, so nothing is guessed."""
    (result,) = shapetrace.check(_UnannotatedLeaky(), inputs=[torch.randn(2, 10, 64)]).targets
    assert _behaviour_of(result) == {}
    (note,) = [n for n in result.notes if "not checked" in n]
    assert "nothing names the batch axis" in note and "B=5" not in note


def test_check_given_tensors_of_a_correct_model_stays_quiet():
    (result,) = shapetrace.check(AnnotatedMHA(64, 4), inputs=[torch.randn(2, 10, 64)]).targets
    assert not [d for d in result.diagnostics if d.severity == "error"]
    assert not [n for n in result.notes if "batch-leak and causal-leak not checked" in n]
