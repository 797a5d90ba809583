"""Declared inputs are placed by their names: ``--input context=B,S,C`` goes to forward's
``context`` parameter even when ``mask=None`` sits before it, instead of landing in ``mask``."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace.drive.attempt import _in_forward_order


class CrossAttention(nn.Module):
    def __init__(self, n_embd=143, n_head=11):
        super().__init__()
        self.n_head = n_head
        self.q = nn.Linear(n_embd, n_embd)
        self.kv = nn.Linear(n_embd, 2 * n_embd)

    def forward(self, x, mask=None, context=None):
        context = x if context is None else context
        B, T, C = x.shape
        S = context.shape[1]
        q = self.q(x).view(B, T, self.n_head, -1).transpose(1, 2)
        k, v = (t.view(B, S, self.n_head, -1).transpose(1, 2)
                for t in self.kv(context).split(C, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return y.transpose(1, 2).reshape(B, T, C)


def _sdpa_key_shape(result) -> str:
    rec = next(r for r in result.trace.records if r.op == "F.scaled_dot_product_attention")
    return result.trace.shape_of(rec.inputs[1])


def test_a_named_input_goes_to_its_parameter_past_a_default():
    (result,) = st.check(CrossAttention, inputs=["x=B,T,C", "context=B,S,C"]).targets
    assert result.error is None
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert _sdpa_key_shape(result) == "(B, H, S, d)"  # the keys are the context's


def test_inputs_in_forward_order_are_passed_as_given():
    (result,) = st.check(CrossAttention, inputs=["x=B,T,C"]).targets
    assert result.error is None and _sdpa_key_shape(result) == "(B, H, T, d)"


class _Forward(nn.Module):
    def forward(self, x, mask=None, *, scale=1.0):
        return x


@pytest.mark.parametrize("names, expected", [
    pytest.param(["x", "mask"], ["x", "mask"], id="in-order"),
    pytest.param(["mask", "x"], ["x", "mask"], id="reordered"),
    pytest.param(["x", "memory"], ["x", "memory"], id="a-name-forward-lacks"),
    pytest.param(["mask"], ["mask"], id="a-required-parameter-missing"),
    pytest.param(["x", "scale"], ["x", "scale"], id="keyword-only"),
    pytest.param(["input 0", "input 1"], ["input 0", "input 1"], id="tensors-given"),
])
def test_placed_by_name_only_when_every_name_is_a_positional_parameter(names, expected):
    args = [torch.zeros(1) for _ in names]
    _, placed = _in_forward_order(_Forward(), args, names)
    assert placed == expected
