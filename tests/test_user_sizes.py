"""Names at the user's own sizes: declared, proven from the model, or numbers; never a guess."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

import shapetrace
from shapetrace.base.dims import Dims, resolve_dims

sys.path.insert(0, str(Path(__file__).parent / "data" / "names"))
from student_mha import PlainAttention, StudentMHA  # noqa: E402

pytest_plugins = ["pytester"]

STUDENT = {"B": 2, "T": 10, "C": 64, "H": 8}
_WRONG = re.compile(r"\d\*B|B\*B|\bS\b|\bV\b|\bL\b")  # 10 as 2*B, 2 as B*B, stray defaults


def _run(model, dims=None, shape=(2, 10, 64)):
    torch.manual_seed(0)
    with shapetrace.trace(model, dims=dims) as t:
        model(torch.randn(*shape))
    return t


def _shapes(t) -> list[str]:
    return [t.shape_of(m) for rec in t.records for m in (*rec.inputs, *rec.outputs)]


@pytest.mark.parametrize("model", [
    pytest.param(lambda: StudentMHA(64, 8), id="attributes-n_embd-n_head"),
    pytest.param(lambda: PlainAttention(64, 8), id="no-size-attributes"),
])
@pytest.mark.parametrize("dims", [pytest.param(None, id="no-dims"),
                                  pytest.param(STUDENT, id="declared")])
def test_no_wrong_name_at_student_sizes(model, dims):
    t = _run(model(), dims)
    shapes = _shapes(t)
    assert not [s for s in shapes if _WRONG.search(s)], shapes
    for text in (d.message for d in t.diagnostics):
        assert "2*B" not in text


def test_declared_sizes_name_the_axes():
    t = _run(PlainAttention(64, 8), STUDENT)
    assert t.shape_of(t.records[0].outputs[0]) == "(B, T, C)"
    qkv = next(r for r in t.records if r.op == "F.linear")
    assert t.shape_of(qkv.outputs[0]) == "(B, T, 3*C)"
    # H = d = 8: either name could be wrong, so the split axes print as numbers
    view = next(r for r in t.records if r.op == "Tensor.reshape")
    assert t.shape_of(view.outputs[0]) == "(B, T, 8, 8)"


def test_model_attributes_prove_width_but_not_batch_or_time():
    t = _run(StudentMHA(64, 8))
    assert t.shape_of(t.records[0].outputs[0]) == "(2, 10, C)"
    assert set(t.dims) == {"C", "H", "d"}


def test_nothing_proven_prints_numbers():
    t = _run(PlainAttention(64, 8))
    assert t.shape_of(t.records[0].outputs[0]) == "(2, 10, 64)"
    assert len(t.dims) == 0


def test_probe_sizes_still_named_without_dims():
    d = Dims()
    t = _run(PlainAttention(d["C"], d["H"]), shape=(d["B"], d["T"], d["C"]))
    assert t.shape_of(t.records[0].outputs[0]) == "(B, T, C)"


@pytest.mark.parametrize("divide_by_width", [pytest.param(True, id="sqrt-C"),
                                             pytest.param(False, id="sqrt-d")])
@pytest.mark.parametrize("dims", [pytest.param(None, id="no-dims"),
                                  pytest.param(STUDENT, id="declared")])
def test_attention_scale_never_names_the_wrong_size(divide_by_width, dims):
    """At H = d = 8, dividing by sqrt(C) = 8 is also dividing by d: say the factor only."""
    t = _run(StudentMHA(64, 8, scale_by_width=divide_by_width), dims)
    found = [d for d in t.diagnostics if d.rule == "attention-scale"]
    if not divide_by_width:
        assert found == []
        return
    assert len(found) == 1
    message, hint = found[0].message, found[0].hint
    assert "0.125" in message and "1/d " not in message and "1/8" not in message
    assert "not by head_size itself" not in hint


def test_attention_scale_names_the_size_when_only_one_explains_it():
    t = _run(StudentMHA(96, 4, scale_by_width=True), {"B": 2, "T": 10, "C": 96, "H": 4},
             shape=(2, 10, 96))
    found = [d for d in t.diagnostics if d.rule == "attention-scale"]
    assert len(found) == 1 and "1/sqrt(C)" in found[0].message


@pytest.mark.parametrize("sizes, size, label", [
    pytest.param({"B": 2, "T": 10, "C": 64, "H": 8}, 10, "T", id="declared-exact"),
    pytest.param({"B": 2, "T": 10, "C": 64, "H": 8}, 20, "20", id="B*T-or-2*T-ambiguous"),
    pytest.param({"B": 2, "T": 10, "C": 64, "H": 8}, 8, "8", id="H-equals-d"),
    pytest.param({"B": 2, "T": 10, "C": 64, "H": 8}, 192, "3*C", id="fused-qkv"),
    pytest.param({"B": 2, "T": 10}, 64, "64", id="undeclared-width"),
])
def test_declared_labels(sizes, size, label):
    assert Dims.declared(sizes).label(size) == label


@pytest.mark.parametrize("overrides, factor, label", [
    pytest.param({"H": 4}, 4, "4*C", id="H=4-mlp-width"),
    pytest.param({"B": 2}, 4, "4*C", id="B=2-mlp-width"),
    pytest.param({}, 4, "4*C", id="defaults"),
    pytest.param({}, 3, "3*C", id="fused-qkv"),
])
def test_literal_factor_is_not_a_name_at_probe_sizes(overrides, factor, label):
    dims = Dims(overrides)
    assert dims.label(factor * dims["C"]) == label


def test_batch_of_two_does_not_name_a_ten():
    assert Dims({"B": 2}).label(10) == "10"


@pytest.mark.parametrize("sizes, probe", [
    pytest.param([5, 7, 143, 429], True, id="probe-B-T-C"),
    pytest.param([7, 7], True, id="a-T-mask"),
    pytest.param([2, 10, 64, 65], False, id="student-with-vocab-65"),
    pytest.param([10, 5], False, id="ten-is-not-2*B"),
    pytest.param([5, 7, 143, 16], True, id="probe-with-a-constant"),
])
def test_probe_sizes_are_recognised(sizes, probe):
    assert (not resolve_dims({}, sizes).strict) is probe


def test_marker_dims_reach_the_trace(pytester):
    pytester.makepyfile(test_student="""
        import pytest, torch, shapetrace, torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x.view(2, 10, 8, 8)

        @pytest.mark.shapetrace(dims={"B": 2, "T": 10, "C": 64})
        def test_it(shapetrace):
            with shapetrace.trace(Net()) as t:
                Net()(torch.randn(2, 10, 64))
            shapes = [t.shape_of(m) for r in t.records for m in r.outputs]
            assert shapes[-1] == "(B, T, 8, 8)", shapes
    """)
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
