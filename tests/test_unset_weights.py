"""A weight its constructor leaves unset (a ``reset_parameters`` that does nothing, so
``torch.empty``'s memory: at times NaN, at times huge) says nothing about the module's paths:
no weight-without-effect from it. A weight that is set and cut off still is one."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class _Unset(nn.Linear):
    def reset_parameters(self):
        pass


class UnsetWeights(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.inner = _Unset(dim, dim)
        with torch.no_grad():  # what stale memory may hold
            self.inner.weight.fill_(float("nan"))
            self.inner.bias.zero_()

    def forward(self, x):
        return self.inner(x)


class CutOff(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.used = nn.Linear(dim, dim)
        self.unused = nn.Linear(dim, dim)

    def forward(self, x):
        dropped = self.unused(x)  # noqa: F841 - computed, never used
        return self.used(x)


def _rules(cls) -> list[str]:
    result = st.check(cls, init={"dim": "C"}, inputs=["x=B,T,C"]).targets[0]
    return [d.rule for d in result.diagnostics]


def test_an_unset_weight_is_no_weight_without_effect():
    assert "weight-without-effect" not in _rules(UnsetWeights)


def test_a_set_weight_cut_off_still_is():
    assert "weight-without-effect" in _rules(CutOff) or "discarded-result" in _rules(CutOff)
