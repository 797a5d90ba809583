"""attention-textbook: an input whose whole part of the scores the softmax removes. An additive
(Bahdanau) score without its nonlinearity splits into the decoder state's part, the same for
every encoder position, and the keys' part: the weights never depend on the state. Found at the
softmax; the same score with tanh, a dot-product cross-attention, a self-attention and an
attention pooling with a learned query stay quiet."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn as nn

import shapetrace as st


class AdditiveNoTanh(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = nn.Linear(2 * dim, dim)
        self.v = nn.Parameter(torch.randn(dim) / dim ** 0.5)

    def scores(self, state, keys):
        pair = torch.cat([state[:, None].expand_as(keys), keys], dim=-1)
        return self.attn(pair) @ self.v

    def forward(self, state, keys):
        weights = self.scores(state, keys).softmax(dim=-1)  # removed
        return (weights[..., None] * keys).sum(1)


class AdditiveTanh(AdditiveNoTanh):
    def scores(self, state, keys):
        pair = torch.cat([state[:, None].expand_as(keys), keys], dim=-1)
        return torch.tanh(self.attn(pair)) @ self.v


class DotCross(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)

    def forward(self, state, keys):
        scores = (keys @ self.q(state)[:, :, None]).squeeze(-1) / keys.shape[-1] ** 0.5
        return (scores.softmax(-1)[..., None] * keys).sum(1)


class LearnedQueryPooling(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.query = nn.Parameter(torch.randn(dim))
        self.gate = nn.Linear(dim, dim)

    def forward(self, state, keys):
        weights = (keys @ self.query).softmax(-1)
        return (weights[..., None] * keys).sum(1) + self.gate(state)


INPUTS = ["state=B,C", "keys=B,T,C"]


def _errors(cls):
    result = st.check(cls, init={"dim": "C"}, inputs=INPUTS).targets[0]
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.severity == "error"]


def test_a_state_the_softmax_removes_is_found_at_the_softmax():
    (found,) = _errors(AdditiveNoTanh)
    lines, start = inspect.getsourcelines(AdditiveNoTanh)
    line = start + next(i for i, t in enumerate(lines) if "# removed" in t)
    assert (found.rule, found.line) == ("attention-textbook", line)
    assert "`state`" in found.message and "removes everything" in found.message


@pytest.mark.parametrize("cls", [AdditiveTanh, DotCross, LearnedQueryPooling])
def test_a_state_that_moves_the_weights_is_quiet(cls):
    assert _errors(cls) == []
