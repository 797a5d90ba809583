"""norm-epsilon: a norm that runs with an epsilon of 1 or more (a flag or a size passed where
the epsilon goes) is found at the line that built it; small epsilons in every spelling stay
quiet."""

from __future__ import annotations

import inspect

import pytest
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st


def _errors(cls):
    result = st.check(cls, init={"d": "C"}).targets[0]
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.severity == "error"]


def _line(cls, marker: str) -> int:
    lines, start = inspect.getsourcelines(cls)
    return start + next(i for i, text in enumerate(lines) if marker in text)


class FlagAsEpsilon(nn.Module):
    def __init__(self, d, use_bias=True):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d, use_bias)  # built

    def forward(self, x):
        return self.norm(self.proj(x))  # used


class LengthAsEpsilon(nn.Module):
    def __init__(self, d, length=7):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.norm = nn.BatchNorm1d(d, length)  # built

    def forward(self, x):
        return self.norm(self.proj(x).transpose(1, 2)).transpose(1, 2)  # used


class FunctionalOne(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        h = self.proj(x)
        return F.layer_norm(h, h.shape[-1:], eps=1.0)  # built used


@pytest.mark.parametrize("cls", [FlagAsEpsilon, LengthAsEpsilon, FunctionalOne])
def test_an_epsilon_of_one_or_more_is_found_where_the_norm_was_built(cls):
    found = [d for d in _errors(cls) if d.rule == "norm-epsilon"]
    assert len(found) == 1, found
    assert found[0].line == _line(cls, "# built")
    assert found[0].used_at is None or found[0].used_at[1] == _line(cls, "# used")
    assert "not normalised" in found[0].message


def test_the_flag_is_named_in_the_message():
    (found,) = [d for d in _errors(FlagAsEpsilon) if d.rule == "norm-epsilon"]
    assert "nn.LayerNorm(d, use_bias)" in found.message and "True (1.0)" in found.message


class SmallEpsilons(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d, 1e-6)
        self.bare = nn.LayerNorm(d, eps=1e-12, elementwise_affine=False)
        self.gn = nn.GroupNorm(1, d, 1e-3)
        self.bn = nn.BatchNorm1d(d, 0.1)

    def forward(self, x):
        h = self.bare(self.ln(self.proj(x)))
        h = F.normalize(h, dim=-1, eps=1e-8)
        h = self.gn(h.transpose(1, 2))
        return self.bn(h).transpose(1, 2)


def test_small_epsilons_stay_quiet():
    assert _errors(SmallEpsilons) == []
