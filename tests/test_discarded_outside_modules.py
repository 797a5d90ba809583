"""discarded-result outside any module (a script, a notebook cell, a test): a bare expression
that only looks at a value is not a bug; one that reads as in-place (``masked_fill``) is."""

from __future__ import annotations

import torch

import shapetrace


def _discarded(trace) -> list[int]:
    return [d.line for d in trace.diagnostics if d.rule == "discarded-result"]


def test_a_bare_reduction_in_script_code_is_not_reported():
    with shapetrace.trace() as t:
        a = torch.randn(5, 3)
        a.sum()
        (a * 2).mean(dim=0)
    assert _discarded(t) == []


def test_a_bare_masked_fill_in_script_code_is_reported():
    with shapetrace.trace() as t:
        scores = torch.randn(4, 4)
        mask = torch.ones(4, 4, dtype=torch.bool).triu(1)
        scores.masked_fill(mask, float("-inf"))
    assert len(_discarded(t)) == 1, t.diagnostics


def test_a_bare_reduction_inside_forward_is_still_reported():
    class Forgets(torch.nn.Module):
        def forward(self, x):
            x.sum(dim=-1)
            return x * 2

    with shapetrace.trace() as t:
        Forgets()(torch.randn(5, 7))
    assert len(_discarded(t)) == 1
