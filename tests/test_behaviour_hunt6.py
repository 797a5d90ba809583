"""Behaviour checks on styles nobody had written here (tests/data/styles/hunt6b_*.py): a prefill
chunk after a KV cache, local windows, chunked attention with memory, causal depthwise convs,
token shift, decayed scans (loop, log-space cumsum, cumprod), an FFT-convolved EMA, RoPE from
sliced tables, a cross-attending causal decoder; norms that read the batch only in training,
lengths and prefix lengths per sample, MoE routing without capacity; randomness that follows
``self.training``; caches and masks the caller passed in. Every correct style is quiet (and the
causal ones are checked for causality, not skipped); every buggy twin is found once by its rule
at its ``# BUG`` line, or, where the check cannot see that line, at the op it names
(``FOUND_AT``)."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

import shapetrace as st
from style_corpus import STYLES, assert_found_once, bug_line, check, load, modules, show
from shapetrace.behaviour import run_behaviour
from shapetrace.base.dims import Dims

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILES = sorted(STYLES.glob("hunt6b_*.py"))
CORRECT = list(modules(FILES, "correct", "behave6"))
BUGGY = list(modules(FILES, "buggy", "behave6"))
CAUSAL_FILE = STYLES / "hunt6b_causal.py"


def test_the_corpus_is_there():
    assert len(FILES) == 3
    assert len(CORRECT) >= 20 and len(BUGGY) >= 10
    assert {p.values[0].BUG for p in BUGGY} == {
        "causal-leak", "batch-leak", "nondeterministic-eval", "input-mutated"}


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_style_is_quiet(cls):
    report = check(cls, behaviour=True)
    assert report.targets[0].error is None, report.targets[0].error
    loud = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not loud, show(report)
    assert report.ok


@pytest.mark.parametrize("cls", [p for p in CORRECT if p.id.startswith("hunt6b_causal-")])
def test_correct_causal_style_is_checked_for_causality(cls):
    """Quiet because it is causal, not because causal-leak was skipped."""
    result = check(cls, behaviour=True).targets[0]
    assert not [n for n in result.notes if "causal-leak not checked" in n], result.notes
    assert not [s for s in result.skipped if "causal-leak" in s], result.skipped


def _found_at(cls, found):
    """The op a twin whose bug line the check cannot see is named at: its ``FOUND_AT`` text."""
    path = inspect.getsourcefile(cls)
    with open(path, encoding="utf-8") as handle:
        text = handle.read().splitlines()[found.line - 1]
    assert cls.FOUND_AT in text, (found.line, text)


@pytest.mark.parametrize("cls", BUGGY)
def test_buggy_twin_is_found_at_its_line(cls):
    if hasattr(cls, "FOUND_AT"):
        _, found = assert_found_once(cls, at_line=False)
        _found_at(cls, found)
    else:
        assert_found_once(cls)


# --- what the misses and false locations found here were ----------------------------------------

def test_a_prefill_leak_is_named_where_positions_combine_not_at_the_cache_cat():
    """``torch.cat([past_k, k], dim=2)`` puts S cached and T new keys side by side: the (S + T)
    axis holds positions but none of them combines with another, and (T, S + T) scores are
    legal before masking like (T, T) ones. The leak is named where the weights meet the values."""
    causal = load(CAUSAL_FILE, "behave6")
    cls = causal.CausalPrefillMaskWithoutOffset
    _, found = assert_found_once(cls)
    assert "torch.cat" not in found.message and "@" in found.message, found.message


def test_a_left_pad_is_not_the_leak_but_a_groupnorm_over_time_is():
    causal = load(CAUSAL_FILE, "behave6")
    _, found = assert_found_once(causal.CausalConvGroupNorm)
    assert "F.pad" not in found.message and "self.norm(h)" in found.message, found.message


def test_a_right_pad_before_a_convolution_is_still_named():
    causal = load(CAUSAL_FILE, "behave6")

    class CentredPad(causal.CausalDepthwiseConv):
        def forward(self, x):
            h = nn.functional.pad(x.transpose(1, 2), (1, 2))
            return self.proj(self.conv(h).transpose(1, 2))

    report = st.check(CentredPad, init={"d_model": "C"}, inputs=["x=B,T,C"])
    found = [d for d in report.diagnostics if d.rule == "causal-leak"]
    assert len(found) == 1 and "F.pad" in found[0].message, show(report)


def test_a_false_causal_flag_is_believed_over_a_mask_that_looks_causal():
    """A prefix-LM's mask ORs a triangle with its prefix; the module says ``causal = False``."""
    batch = load(STYLES / "hunt6b_batch.py", "behave6")
    result = check(batch.PrefixLMPerSample, behaviour=True).targets[0]
    assert not [d for d in result.diagnostics if d.rule == "causal-leak"]
    assert any("says it is not causal" in n for n in result.notes), result.notes
    declared = st.check(batch.PrefixLMPerSample, init=batch.PrefixLMPerSample.INIT,
                        inputs=batch.PrefixLMPerSample.INPUTS, causal=True)
    assert [d.rule for d in declared.diagnostics if d.severity == "error"] == ["causal-leak"]


class _RateScaled(nn.Module):
    """Old-style inverted dropout done at test time: eval multiplies by (1 - p). It depends on
    the rate, deterministically."""

    def __init__(self, dim, drop_rate=0.0):
        super().__init__()
        self.drop_rate = drop_rate
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if self.training:
            return nn.functional.dropout(self.lin(x), self.drop_rate)
        return self.lin(x) * (1 - self.drop_rate)


def test_per_sample_stochastic_depth_left_on_is_found():
    """One keep/drop draw per sample: at a rate of 0.1 two runs keep all five samples alike a
    third of the time; the rate-0.5 recheck tells them apart."""
    evals = load(STYLES / "hunt6b_eval.py", "behave6")
    _, found = assert_found_once(evals.StochasticDepthUnguarded)
    assert "torch.rand" in found.message


def test_an_eval_output_that_depends_on_the_rate_is_not_random():
    D = Dims()
    result = run_behaviour(_RateScaled(D["C"]), [torch.randn(D["B"], D["T"], D["C"])],
                           causal=None, dims=D)
    assert result.diagnostics == [], [d.message for d in result.diagnostics]

