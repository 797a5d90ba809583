"""residual-twice is a wrapper that adds its input and a caller that adds it again; a state and an
input injected at every step that begin as one tensor (``x = self.loop(x, x)``) are added by one
module's own code, by design, and stay quiet."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


def with_step(h, step):
    return h + step * torch.ones(h.shape[-1])


class Injected(nn.Module):
    """Each step reads the state plus the input injected again."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.step = nn.Linear(dim, dim)

    def forward(self, h, e):
        for t in range(2):
            combined = self.norm(with_step(h, t) + e)
            h = h + self.step(combined)
        return h


class Recurrent(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.loop = Injected(dim)

    def forward(self, x):
        e = self.inp(x)
        return self.loop(e, e)


class AddsItsInput(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fn = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fn(x) + x


class WrappedTwice(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.block = AddsItsInput(dim)

    def forward(self, x):
        return self.block(x) + x  # the skip added again


def test_a_state_and_an_injected_input_that_begin_as_one_tensor_are_quiet():
    result = st.check(Recurrent).targets[0]
    assert result.error is None
    assert "residual-twice" not in {d.rule for d in result.diagnostics}, result.diagnostics


def test_a_wrapper_and_its_caller_adding_the_skip_are_found():
    result = st.check(WrappedTwice).targets[0]
    assert "residual-twice" in {d.rule for d in result.diagnostics}, result.diagnostics
