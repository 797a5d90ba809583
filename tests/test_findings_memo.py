"""Findings worked out once per distinct run (``rules.memo``): a block traced again as it ran
before takes the findings of the rules that read no values, the rules that read what the value
probes measured run again, and anything else a rule reads makes another run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import shapetrace
from models_basic import B, C, MHA, T, ViewJumble
from shapetrace import rules
from shapetrace.analysis.facts import analyse
from shapetrace.base.ops import SOFTMAXES
from shapetrace.naming import memo as names
from shapetrace.rules import memo
from shapetrace.rules.registry import RULES

_spec = importlib.util.spec_from_file_location(
    "registry_models", Path(__file__).with_name("data") / "registry" / "models.py")
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)


def _run(model, x, **kwargs):
    with shapetrace.trace(model, **kwargs) as t:
        y = model(x)
    t.diagnostics
    return t, y


def _found(t) -> list:
    return [(d.rule, d.line, d.module, d.message, d.count, d.lines) for d in t.diagnostics]


class _LogOfInput(nn.Module):
    """log of its input's magnitude: -inf exactly where the input holds a 0 (a value, not the
    structure of the run)."""

    def forward(self, x):
        return torch.log(x.abs()).sum(-1)


@pytest.fixture
def calls(monkeypatch) -> dict:
    """rule name -> how often its check ran, every run's findings kept afresh."""
    counted: dict[str, int] = {}
    checks = dict(rules.trace_checks())

    def counting(name, check):
        def run(analysis):
            counted[name] = counted.get(name, 0) + 1
            return check(analysis)
        return run

    monkeypatch.setattr(rules, "_checks", {n: counting(n, c) for n, c in checks.items()})
    memo._FOUND.clear()
    names._NAMED.clear()
    return counted


def test_a_run_again_takes_the_findings_of_the_rules_that_read_no_values(calls):
    model = ViewJumble().eval()
    first, _ = _run(model, torch.randn(B, T, C))
    second, _ = _run(model, torch.randn(B, T, C))  # other values, the same run
    assert "reshape-jumble" in [d.rule for d in first.diagnostics]
    assert _found(second) == _found(first)
    for name, rule in RULES.items():
        if rule.check is not None:
            assert calls[name] == (2 if rule.reads_values else 1), name
    # each trace has findings of its own: merging or adding to one changes no other
    second.diagnostics[0].count += 5
    third, _ = _run(model, torch.randn(B, T, C))
    assert _found(third) == _found(first)


def test_the_rules_that_read_values_run_on_every_run(calls):
    model = _LogOfInput()
    x = torch.rand(B, T, C) + 0.5
    clean, _ = _run(model, x)
    zero = x.clone()
    zero[1, 2, 3] = 0.0
    nan, _ = _run(model, zero)  # the same ops, lines and shapes; a 0 among the values
    again, _ = _run(model, x)
    assert calls["reshape-jumble"] == 1 and calls["non-finite"] == 3
    assert "non-finite" not in [d.rule for d in clean.diagnostics]
    assert "non-finite" in [d.rule for d in nan.diagnostics]
    assert "non-finite" not in [d.rule for d in again.diagnostics]


def test_what_a_rule_reads_besides_the_names_makes_another_run(calls):
    model = MHA().eval()
    x = torch.randn(B, T, C)
    plain, _ = _run(model, x)
    assert memo.findings_key(plain) is not None
    kept, _ = _run(model, x)
    # the model's output dropped at once: the same ops, names and shapes, another liveness
    with shapetrace.trace(model) as dropped:
        model(x)
    # the same class under another root: other module paths, which findings name
    rooted, _ = _run(nn.Sequential(model), x)
    keys = [memo.findings_key(t) for t in (plain, kept, dropped, rooted)]
    assert keys[0] == keys[1]
    assert keys[2] != keys[0] and keys[3] != keys[0]
    assert memo.findings_key(plain, ("non-finite",)) != keys[0]  # rules left out


def test_a_trace_that_raised_is_checked_afresh(calls):
    class Raises(nn.Module):
        def forward(self, x):
            y = x.softmax(-1)
            raise ValueError("stop")

    for _ in range(2):
        with pytest.raises(ValueError):
            with shapetrace.trace(Raises()) as t:
                Raises()(torch.randn(B, T, C))
        assert memo.findings_key(t) is None
        t.diagnostics
    assert calls["reshape-jumble"] == 2


def _modules():
    """(module, input, whether the value probes measure something in its run)."""
    x = torch.randn(B, T, C)
    return [
        (models.MaskAfterSoftmax(C, 11), x, True), (models.MaskBeforeSoftmax(C, 11), x, True),
        (models.FullyMaskedRow(C), x, True), (models.FiniteMaskedRow(C), x, True),
        (models.PositionsAdded(C, T), x, False), (models.PoolingOverScoreAxis(C), x, False),
        (models.ScaleFoldedIntoWeight(C), x, False), (models.BranchGatedByZeros(C), x, False),
        (ViewJumble(), x, True), (MHA(), x, True),
    ]


@pytest.mark.parametrize("index", range(len(_modules())))
def test_a_rule_that_reads_no_values_finds_the_same_without_them(index):
    """What ``Rule.reads_values`` declares: the rules that read no values find the same on a
    run whose value probes measured nothing."""
    model, x, measured = _modules()[index]
    torch.manual_seed(0)
    with shapetrace.trace(model.eval()) as t:
        model(x)
    probed = [r for r in t.records if r.weight_sums is not None or r.non_finite is not None]
    with_values = analyse(t)
    found = {name: [(d.rule, d.line, d.message, d.data) for d in check(with_values)]
             for name, check in rules.trace_checks().items()}
    kept = [(r.weight_sums, r.non_finite) for r in t.records]
    for r in t.records:
        r.weight_sums = r.non_finite = None
    try:
        without = analyse(t)
        for name, check in rules.trace_checks().items():
            if not RULES[name].reads_values:
                again = [(d.rule, d.line, d.message, d.data) for d in check(without)]
                assert again == found[name], name
    finally:
        for r, (sums, bad) in zip(t.records, kept):
            r.weight_sums, r.non_finite = sums, bad
    assert bool(probed) == measured


def test_the_value_rules_are_declared():
    assert {n for n, r in RULES.items() if r.reads_values} == {
        "softmax-axis", "unnormalized-attention", "non-finite"}
    assert all(r.reads_values for r in RULES.values() if r.needs_values and r.check)


def test_findings_read_inside_the_block_are_worked_out_afresh(calls):
    model = MHA().eval()
    x = torch.randn(B, T, C)
    _run(model, x)
    for _ in range(2):
        with shapetrace.trace(model) as t:
            y = model(x)
            inside = _found(t)  # what lives at the end is not known yet
        assert y is not None
    assert calls["reshape-jumble"] == 3
    assert inside == _found(_run(model, x)[0])


@pytest.mark.parametrize("index", [0, 1, 2, 8, 9])
def test_a_run_again_is_handed_the_attentions_it_would_find(calls, index, monkeypatch):
    """The rules that read values start, on a run that repeats one kept, from the attentions
    the kept run found (by record index): the same as those found afresh."""
    from shapetrace.analysis import facts
    from shapetrace.analysis.graph import attention_indices, find_attentions

    looked: list = []
    monkeypatch.setattr(facts, "find_attentions",
                        lambda *a: looked.append(1) or find_attentions(*a))
    model, x, _ = _modules()[index]
    model.eval()
    _run(model, x)
    assert looked == [1]
    again, _ = _run(model, x)
    assert looked == [1]  # handed, not looked for
    analysis = again._analyse()
    handed = attention_indices(analysis.attentions)
    fresh = attention_indices(find_attentions(analysis.records_of(SOFTMAXES), analysis.graph))
    assert handed == fresh and handed
    assert all(a.softmax is analysis.records[a.softmax.index] for a in analysis.attentions)
