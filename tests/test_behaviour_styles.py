"""Behaviour checks on styles of the corpus (tests/data/styles/): correct modules that look
suspicious (state kept across calls, caches, norms, pooling, capacity-limited experts), causal
styles of decoders, state-space models and streaming code (a prefill after a KV cache, windows,
convolutions, scans) checked for causality and not skipped, leaks that autograd cannot see,
where a leak is named, a ``causal`` flag believed over a mask, and randomness that follows
``self.training`` or only depends on a rate. The corpus's own checks (quiet correct modules,
twins found once) are in test_style_corpus.py.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import shapetrace as st
from style_corpus import STYLES, assert_found_once, check, load, modules, show
from shapetrace.behaviour import run_behaviour
from shapetrace.base.dims import Dims

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CAUSAL_FILE = STYLES / "causal_streaming.py"


def _corpus(name: str):
    return load(STYLES / name, "behaviour")


@pytest.mark.parametrize("cls", list(modules([CAUSAL_FILE], "correct", "behaviour")))
def test_correct_causal_style_is_checked_for_causality(cls):
    """Quiet because it is causal, not because causal-leak was skipped."""
    result = check(cls, behaviour=True).targets[0]
    assert not [n for n in result.notes if "causal-leak not checked" in n], result.notes
    assert not [s for s in result.skipped if "causal-leak" in s], result.skipped


@pytest.mark.parametrize("cls", list(modules([STYLES / "hidden_leaks.py"], "buggy", "behaviour")))
def test_a_leak_autograd_cannot_see_is_found(cls):
    """Mixing under ``torch.no_grad()`` or behind ``.detach()``: the only loud finding is the
    leak, found by changing the last sample and the last position."""
    report = check(cls, behaviour=True)
    assert report.targets[0].error is None, report.targets[0].error
    loud = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert [d.rule for d in loud] == [cls.BUG], show(report)
    assert loud[0].data["leaks"] > 0


def test_a_class_attribute_declares_causal_intent():
    report = check(_corpus("hidden_leaks.py").NoGradFutureMax)
    assert not any("causal-leak not checked" in n for n in report.targets[0].notes)


# --- state kept across calls ---------------------------------------------------------------------

D = Dims()


def _cache_model():
    correct = _corpus("behaviour_lookalikes.py")
    torch.manual_seed(0)
    return correct.CausalWithCache(D["C"], D["H"])


def test_a_cache_kept_across_calls_is_not_randomness():
    model = _cache_model().eval()
    x = torch.randn(D["B"], D["T"], D["C"])
    with torch.no_grad():
        model(x)  # the cache now holds this batch: the next call's output differs
        assert not torch.equal(model(x), model(x))
    result = run_behaviour(model, [x], causal=True, dims=D)
    assert result.diagnostics == [], [d.message for d in result.diagnostics]
    assert any("per-sample state" in s and "`cache`" in s for s in result.skipped), result.skipped


def test_the_state_is_put_back_for_every_run_and_the_callers_module_is_untouched():
    model = _cache_model().eval()
    x = torch.randn(D["B"], D["T"], D["C"])
    run_behaviour(model, [x], causal=True, dims=D)
    assert model.cache is None  # the probe ran a copy


def test_dropout_left_on_is_still_found_beside_a_cache():
    correct = _corpus("behaviour_lookalikes.py")

    class Leaky(correct.CausalWithCache):
        def forward(self, x):
            return nn.functional.dropout(super().forward(x), 0.1)

    diags = run_behaviour(Leaky(D["C"], D["H"]), [torch.randn(D["B"], D["T"], D["C"])],
                          causal=True, dims=D).diagnostics
    assert [d.rule for d in diags] == ["nondeterministic-eval"]


def test_mean_pooled_classifier_gets_a_note_not_a_causal_leak():
    correct = _corpus("behaviour_lookalikes.py")
    result = run_behaviour(correct.ClassifierMeanPool(D["C"], D["H"]),
                           [torch.randn(D["B"], D["T"], D["C"])], causal=True, dims=D)
    assert result.diagnostics == []
    assert any("pooling over T" in n for n in result.notes), result.notes


def test_moe_dropping_tokens_past_capacity_depends_on_batch_order():
    # Switch-style capacity: which tokens are dropped depends on where they sit in the batch.
    # That is what batch-leak states, truthfully; at a capacity every token fits in it is quiet.
    correct = _corpus("behaviour_lookalikes.py")
    torch.manual_seed(0)
    x = torch.randn(D["B"], D["T"], D["C"])
    tight = correct.Top1MoECapacity(D["C"], capacity=1)
    roomy = correct.Top1MoECapacity(D["C"], capacity=D["T"])
    roomy.load_state_dict(tight.state_dict())
    tight_rules = [d.rule for d in run_behaviour(tight, [x], causal=None, dims=D).diagnostics]
    assert tight_rules == ["batch-leak"]
    assert run_behaviour(roomy, [x], causal=None, dims=D).diagnostics == []


# --- where a leak is named, and what is no leak ---------------------------------------------------

def test_a_prefill_leak_is_named_where_positions_combine_not_at_the_cache_cat():
    """``torch.cat([past_k, k], dim=2)`` puts S cached and T new keys side by side: the (S + T)
    axis holds positions but none of them combines with another, and (T, S + T) scores are
    legal before masking like (T, T) ones. The leak is named where the weights meet the values."""
    causal = load(CAUSAL_FILE, "behaviour")
    cls = causal.CausalPrefillMaskWithoutOffset
    _, found = assert_found_once(cls)
    assert "torch.cat" not in found.message and "@" in found.message, found.message


def test_a_left_pad_is_not_the_leak_but_a_groupnorm_over_time_is():
    causal = load(CAUSAL_FILE, "behaviour")
    _, found = assert_found_once(causal.CausalConvGroupNorm)
    assert "F.pad" not in found.message and "self.norm(h)" in found.message, found.message


def test_a_right_pad_before_a_convolution_is_still_named():
    causal = load(CAUSAL_FILE, "behaviour")

    class CentredPad(causal.CausalDepthwiseConv):
        def forward(self, x):
            h = nn.functional.pad(x.transpose(1, 2), (1, 2))
            return self.proj(self.conv(h).transpose(1, 2))

    report = st.check(CentredPad, init={"d_model": "C"}, inputs=["x=B,T,C"])
    found = [d for d in report.diagnostics if d.rule == "causal-leak"]
    assert len(found) == 1 and "F.pad" in found[0].message, show(report)


def test_a_false_causal_flag_is_believed_over_a_mask_that_looks_causal():
    """A prefix-LM's mask ORs a triangle with its prefix; the module says ``causal = False``."""
    batch = _corpus("batch_independence.py")
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
    evals = _corpus("randomness_and_inputs.py")
    _, found = assert_found_once(evals.StochasticDepthUnguarded)
    assert "torch.rand" in found.message


def test_an_eval_output_that_depends_on_the_rate_is_not_random():
    D = Dims()
    result = run_behaviour(_RateScaled(D["C"]), [torch.randn(D["B"], D["T"], D["C"])],
                           causal=None, dims=D)
    assert result.diagnostics == [], [d.message for d in result.diagnostics]

