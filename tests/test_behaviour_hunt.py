"""Behaviour checks on correct modules that look suspicious (state across calls, norms,
stochastic depth, pooling, caches, no_grad blocks, left padding) and on their buggy twins."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import shapetrace as st
from style_corpus import bug_line, show
from shapetrace.behaviour import run_behaviour
from shapetrace.base.dims import Dims
from shapetrace.rules.registry import RULES

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DATA = Path(__file__).with_name("data") / "behaviour_hunt"


def _load(name: str):
    sys.path.insert(0, str(DATA))
    try:
        spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(DATA))


def _classes(name: str):
    module = _load(name)
    return [pytest.param(cls, id=cls.__name__) for cls_name, cls in vars(module).items()
            if isinstance(cls, type) and issubclass(cls, nn.Module)
            and cls.__module__ == module.__name__ and not cls_name.startswith("_")]


def check(cls):
    return st.check(cls, init=getattr(cls, "INIT", None), inputs=cls.INPUTS,
                    dims=getattr(cls, "DIMS", None), behaviour=True)


CORRECT = _classes("correct")
BUGGY = _classes("buggy")
HIDDEN = _classes("hidden")


def test_the_corpus_is_there():
    assert len(CORRECT) >= 20 and len(BUGGY) >= 8 and HIDDEN


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_model_is_clean(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    loud = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not loud, show(report)


@pytest.mark.parametrize("cls", BUGGY)
def test_buggy_twin_is_found_at_its_line(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    found = [d for d in report.diagnostics if d.rule == cls.BUG]
    assert len(found) == 1, show(report)
    assert found[0].line == bug_line(cls), show(report)
    assert found[0].severity == RULES[cls.BUG].severity and found[0].hint


@pytest.mark.parametrize("cls", HIDDEN)
def test_a_leak_autograd_cannot_see_is_found(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    loud = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert [d.rule for d in loud] == [cls.BUG], show(report)
    assert loud[0].data["leaks"] > 0


def test_a_class_attribute_declares_causal_intent():
    hidden = _load("hidden")
    report = check(hidden.NoGradFutureMax)
    assert not any("causal-leak not checked" in n for n in report.targets[0].notes)


# --- state kept across calls ---------------------------------------------------------------------

D = Dims()


def _cache_model():
    correct = _load("correct")
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
    correct = _load("correct")

    class Leaky(correct.CausalWithCache):
        def forward(self, x):
            return nn.functional.dropout(super().forward(x), 0.1)

    diags = run_behaviour(Leaky(D["C"], D["H"]), [torch.randn(D["B"], D["T"], D["C"])],
                          causal=True, dims=D).diagnostics
    assert [d.rule for d in diags] == ["nondeterministic-eval"]


def test_mean_pooled_classifier_gets_a_note_not_a_causal_leak():
    correct = _load("correct")
    result = run_behaviour(correct.ClassifierMeanPool(D["C"], D["H"]),
                           [torch.randn(D["B"], D["T"], D["C"])], causal=True, dims=D)
    assert result.diagnostics == []
    assert any("pooling over T" in n for n in result.notes), result.notes


def test_moe_dropping_tokens_past_capacity_depends_on_batch_order():
    # Switch-style capacity: which tokens are dropped depends on where they sit in the batch.
    # That is what batch-leak states, truthfully; at a capacity every token fits in it is quiet.
    correct = _load("correct")
    torch.manual_seed(0)
    x = torch.randn(D["B"], D["T"], D["C"])
    tight = correct.Top1MoECapacity(D["C"], capacity=1)
    roomy = correct.Top1MoECapacity(D["C"], capacity=D["T"])
    roomy.load_state_dict(tight.state_dict())
    tight_rules = [d.rule for d in run_behaviour(tight, [x], causal=None, dims=D).diagnostics]
    assert tight_rules == ["batch-leak"]
    assert run_behaviour(roomy, [x], causal=None, dims=D).diagnostics == []
