"""The trace rules on the zoo in rule_models.py: every bug found at its line, correct styles quiet.

Each buggy module marks the line the finding must point at with ``# BUG``; the tests look the
line number up from the source, so editing the zoo never breaks them.
"""

from __future__ import annotations

import inspect

import pytest
import torch

import rule_models as zoo
import shapetrace
from shapetrace.base.dims import Dims

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

OWN_RULES = ("softmax-axis", "attention-scale", "unnormalized-attention", "silent-broadcast",
             "discarded-result", "reversed-transpose", "non-finite", "dim-collision")
SHAPES = {"x": ("B", "T", "C"), "context": ("B", "S", "C"), "target": ("B",)}


def bug_line(cls) -> int:
    lines, start = inspect.getsourcelines(cls)
    hits = [start + i for i, text in enumerate(lines) if text.rstrip().endswith("# BUG")]
    assert len(hits) == 1, f"{cls.__name__} must mark exactly one line with # BUG"
    return hits[0]


def run(cls, dims=None, train: bool = False):
    """Trace one forward pass of ``cls`` at the probe sizes (an op that raises ends the trace)."""
    sizes = Dims(dims)
    torch.manual_seed(0)
    model = cls(sizes["C"], sizes["H"]).train(train)
    inputs = [torch.randn(*(sizes[n] for n in SHAPES[name])) for name in cls.INPUTS]
    with shapetrace.trace(model, dims=dims) as t:
        try:
            model(*inputs)
        except RuntimeError:
            pass
    return t


def show(diagnostics) -> str:
    return "\n".join(f"{d.severity} {d.rule} line {d.line}: {d.message}" for d in diagnostics)


BUGS = [
    # softmax-axis
    pytest.param(zoo.SoftmaxOverHeads, "softmax-axis", "error", "the heads (H)", id="softmax-over-heads"),
    pytest.param(zoo.SoftmaxOverQueries, "softmax-axis", "error", "the queries (T)", id="softmax-over-queries"),
    pytest.param(zoo.SoftmaxImplicitDim, "softmax-axis", "error", "no dim given", id="softmax-implicit-dim"),
    pytest.param(zoo.SoftmaxOverBatch, "softmax-axis", "error", "B*H", id="softmax-over-batch-bmm"),
    pytest.param(zoo.EinsumKeysFirst, "softmax-axis", "warning", "bhkq", id="einsum-keys-before-queries"),
    pytest.param(zoo.TransposedWeights, "softmax-axis", "error", "over the queries", id="weights-transposed-before-values"),
    # attention-scale
    pytest.param(zoo.ScaleBySqrtC, "attention-scale", "error", "1/sqrt(C)", id="scale-sqrt-C"),
    pytest.param(zoo.ScaleBySqrtH, "attention-scale", "error", "1/sqrt(H)", id="scale-sqrt-H"),
    pytest.param(zoo.ScaledTwice, "attention-scale", "error", "twice", id="scaled-twice"),
    pytest.param(zoo.ScaleByD, "attention-scale", "error", "1/d", id="scale-by-d"),
    pytest.param(zoo.ScaledQThenSDPA, "attention-scale", "error", "default scale", id="prescaled-q-into-sdpa"),
    pytest.param(zoo.SDPAScaleSqrtC, "attention-scale", "error", "1/sqrt(C)", id="sdpa-scale-sqrt-C"),
    pytest.param(zoo.UnscaledT5Style, "attention-scale", "warning", "not scaled", id="no-scale-warning"),
    # unnormalized-attention
    pytest.param(zoo.MaskAfterSoftmax, "unnormalized-attention", "error", "masked_fill", id="mask-after-softmax"),
    pytest.param(zoo.ScaleAfterSoftmax, "unnormalized-attention", "error", "div", id="scale-after-softmax"),
    pytest.param(zoo.MaskAfterSoftmaxEinsum, "unnormalized-attention", "error", "einsum", id="mask-product-after-softmax-einsum"),
    # discarded-result
    pytest.param(zoo.MaskNotAssigned, "discarded-result", "error", "masked_fill", id="masked-fill-not-assigned"),
    pytest.param(zoo.ClampNotAssigned, "discarded-result", "error", "clamp", id="clamp-not-assigned"),
    pytest.param(zoo.MaskedScoresUnused, "discarded-result", "error", "no later op reads it", id="masked-scores-never-read"),
    pytest.param(zoo.TransposeNotAssigned, "discarded-result", "error", "k.transpose(-2, -1)", id="transpose-not-assigned-before-failure"),
    # silent-broadcast
    pytest.param(zoo.RegressionLoss, "silent-broadcast", "warning", "(B, B)", id="pred-minus-target-outer"),
    pytest.param(zoo.OuterSumScores, "silent-broadcast", "warning", "(B, T, T)", id="outer-sum-of-scores"),
    pytest.param(zoo.FirstSampleValues, "silent-broadcast", "warning", "over the batch", id="matmul-broadcasts-one-sample"),
    # reversed-transpose
    pytest.param(zoo.DotT, "reversed-transpose", "error", "(d, T, B)", id="dot-T-on-3d"),
    pytest.param(zoo.DotTCall, "reversed-transpose", "error", ".t()", id="t-call-on-3d"),
    pytest.param(zoo.ReversedPermute, "reversed-transpose", "error", "(d, T, H, B)", id="permute-reversed-4d"),
    # non-finite
    pytest.param(zoo.FullyMaskedRow, "non-finite", "error", "row (0, 0, 0)", id="fully-masked-softmax-row"),
    pytest.param(zoo.LogOfZero, "non-finite", "error", "Inf", id="log-of-zero"),
    pytest.param(zoo.MaskTimesInf, "non-finite", "error", "0 * inf", id="mask-times-minus-inf"),
]


@pytest.mark.parametrize(("cls", "rule", "severity", "text"), BUGS)
def test_bug_found_at_its_line(cls, rule, severity, text):
    t = run(cls)
    found = [d for d in t.diagnostics if d.rule == rule]
    assert found, f"{rule} not reported; got:\n{show(t.diagnostics)}"
    diag = found[0]
    assert diag.line == bug_line(cls), show(found)
    assert diag.file.endswith("rule_models.py")
    assert diag.severity == severity
    assert text in diag.message
    assert diag.hint


@pytest.mark.parametrize(("cls", "rule", "severity", "text"), BUGS)
def test_bug_reported_once(cls, rule, severity, text):
    t = run(cls)
    assert len([d for d in t.diagnostics if d.rule == rule]) == 1, show(t.diagnostics)


CORRECT = [
    pytest.param(zoo.SeparateProjections, None, False, id="separate-projections-view-transpose"),
    pytest.param(zoo.FusedQKVPermute, None, False, id="fused-qkv-permute"),
    pytest.param(zoo.PrescaledQuery, None, False, id="scale-applied-to-q"),
    pytest.param(zoo.EinsumAttention, None, False, id="einsum"),
    pytest.param(zoo.EinopsAttention, None, False, id="einops-rearrange"),
    pytest.param(zoo.SDPACausal, None, False, id="sdpa-is-causal"),
    pytest.param(zoo.SDPAMask, None, False, id="sdpa-attn-mask"),
    pytest.param(zoo.GroupedQuery, {"H": 6}, False, id="grouped-query"),
    pytest.param(zoo.MultiQuery, None, False, id="multi-query"),
    pytest.param(zoo.CrossAttention, None, False, id="cross-attention"),
    pytest.param(zoo.ALiBi, None, False, id="alibi"),
    pytest.param(zoo.PairwiseDistanceBias, None, False, id="pairwise-distances-of-one-tensor"),
    pytest.param(zoo.Rotary, {"d": 8}, False, id="rotary"),
    pytest.param(zoo.FinfoMinMask, None, False, id="finfo-min-additive-mask"),
    pytest.param(zoo.TriuInfMask, None, False, id="full-inf-triu-additive-mask"),
    pytest.param(zoo.InplaceMaskedFill, None, False, id="inplace-masked-fill"),
    pytest.param(zoo.RenormalisedMask, None, False, id="mask-after-softmax-renormalised"),
    pytest.param(zoo.TrainingDropout, None, True, id="dropout-in-training"),
    pytest.param(zoo.GPT2Style, None, False, id="gpt2-conv1d-addmm"),
    pytest.param(zoo.TorchMHABatchFirst, None, False, id="nn-multihead-batch-first"),
    pytest.param(zoo.TorchMHASeqFirst, None, False, id="nn-multihead-seq-first"),
    pytest.param(zoo.ManualSoftmax, None, False, id="manual-softmax"),
    pytest.param(zoo.AttentionPooling, None, False, id="attention-pooling"),
    pytest.param(zoo.SingleHead, None, False, id="single-head-3d"),
    pytest.param(zoo.TiedLMHead, None, False, id="dot-T-on-2d"),
]


@pytest.mark.parametrize(("cls", "dims", "train"), CORRECT)
def test_correct_style_has_no_error(cls, dims, train):
    t = run(cls, dims, train)
    assert not [d for d in t.diagnostics if d.severity == "error"], show(t.diagnostics)


@pytest.mark.parametrize(("cls", "dims", "train"), CORRECT)
def test_correct_style_quiet_in_attention_rules(cls, dims, train):
    t = run(cls, dims, train)
    assert not [d for d in t.diagnostics if d.rule in OWN_RULES], show(t.diagnostics)


def test_unnormalized_attention_checks_eval_mode_dropout():
    t = run(zoo.TrainingDropout, train=False)
    assert not [d for d in t.diagnostics if d.rule == "unnormalized-attention"], show(t.diagnostics)


def test_nothing_left_unused_after_a_failure():
    t = run(zoo.DotT)
    assert any(d.rule == "op-failed" for d in t.diagnostics)
    assert not [d for d in t.diagnostics if d.rule == "discarded-result"], show(t.diagnostics)


def test_result_returned_to_a_caller_that_drops_it_is_not_flagged():
    q, k, v = (torch.randn(5, 11, 7, 13) for _ in range(3))
    with shapetrace.trace() as t:
        zoo.attention(q, k, v)
    assert not [d for d in t.diagnostics if d.rule == "discarded-result"], show(t.diagnostics)


def test_reversed_transpose_reported_where_the_matmul_fails_too():
    t = run(zoo.DotT)
    rules = {d.rule: d.line for d in t.diagnostics}
    assert rules["reversed-transpose"] == rules["op-failed"] == bug_line(zoo.DotT)


@pytest.mark.parametrize(("dims", "pair"), [
    pytest.param({"B": 7}, ["B", "T"], id="batch-equals-time"),
    pytest.param({"d": 11}, ["H", "d"], id="heads-equal-head-size"),
    pytest.param({"S": 7}, ["T", "S"], id="source-equals-target-length"),
])
def test_dim_collision_warns_once_per_pair(dims, pair):
    cls = zoo.CrossAttention if "S" in dims else zoo.SeparateProjections
    t = run(cls, dims)
    found = [d for d in t.diagnostics if d.rule == "dim-collision"]
    assert len(found) == 1, show(found)
    diag = found[0]
    assert diag.severity == "warning"
    assert diag.file is None and diag.line is None
    assert diag.data["names"] == pair
    assert f"{pair[0]} and {pair[1]} are both" in diag.message


def test_no_dim_collision_at_default_sizes():
    t = run(zoo.SeparateProjections)
    assert not [d for d in t.diagnostics if d.rule == "dim-collision"]


def test_collision_of_dims_that_no_axis_uses_is_not_reported():
    # V == L == 29, but no traced axis has that size: nothing can be confused
    t = run(zoo.SeparateProjections, {"V": 29, "L": 29})
    assert not [d for d in t.diagnostics if d.rule == "dim-collision"], show(t.diagnostics)


def test_non_finite_reports_only_the_first_op():
    t = run(zoo.FullyMaskedRow)
    found = [d for d in t.diagnostics if d.rule == "non-finite"]
    assert len(found) == 1 and found[0].op == "F.softmax"


def test_weight_probe_records_only_operands_after_a_softmax():
    t = run(zoo.SeparateProjections)
    probed = {rec.index: rec.weight_sums for rec in t.records if rec.weight_sums}
    assert len(probed) == 1  # att @ v, not q @ k^T
    ((index, sums),) = probed.items()
    minimum, deviations = sums[0]
    # (B, H, T, T) rows: the axis the product sums over is the only one measured
    assert minimum >= 0 and set(deviations) == {3} and deviations[3] < 1e-5


def test_value_rules_quiet_on_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    sizes = Dims()
    model = zoo.MaskAfterSoftmax(sizes["C"], sizes["H"]).eval()
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        x = mode.from_tensor(torch.randn(sizes["B"], sizes["T"], sizes["C"]))
        with shapetrace.trace(model) as t:
            model(x)
    rules = {d.rule for d in t.diagnostics}
    assert "unnormalized-attention" not in rules and "non-finite" not in rules
