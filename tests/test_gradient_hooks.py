"""A forward that keeps a gradient for later (a relevance map hooks its attention weights, a
saliency method retains an activation's gradient) is checked like any other: the checks' own
``torch.no_grad()`` makes such a tensor unable to take a gradient, and the error torch raises
then is the check's doing, never an op-failed finding. A real bug in the same forward is still
found, and torch's methods are put back after the check."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch import Tensor

import shapetrace as st


class RelevanceAttention(nn.Module):
    """Self-attention that keeps its weights' gradient (for a relevance map)."""

    def __init__(self, dim, heads=4, axis=-1):
        super().__init__()
        self.heads, self.axis = heads, axis
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)
        self.weights_grad = None

    def keep(self, grad):
        self.weights_grad = grad

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5).softmax(dim=self.axis)
        weights.register_hook(self.keep)
        mixed = (weights @ v).transpose(1, 2).reshape(b, n, c)
        return self.out(mixed)


class RetainedActivation(nn.Module):
    """A block that retains its hidden activation's gradient (a saliency method)."""

    def __init__(self, dim):
        super().__init__()
        self.up, self.down = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.hidden = None

    def forward(self, x):
        hidden = torch.relu(self.up(x))
        hidden.retain_grad()
        self.hidden = hidden
        return x + self.down(hidden)


def _errors(result):
    return [d.rule for d in result.diagnostics if d.severity == "error"]


def test_a_hooked_attention_is_checked_clean():
    result = st.check(RelevanceAttention, init={"dim": "C"}).targets[0]
    assert result.error is None
    assert _errors(result) == []
    assert not any("register a hook" in (d.message or "") for d in result.diagnostics)


def test_a_retained_gradient_is_checked_clean():
    result = st.check(RetainedActivation, init={"dim": "C"}).targets[0]
    assert result.error is None
    assert _errors(result) == []


def test_a_bug_beside_the_hook_is_still_found():
    result = st.check(RelevanceAttention, init={"dim": "C", "axis": 2}).targets[0]
    assert result.error is None
    assert "softmax-axis" in _errors(result)


def test_torch_methods_are_put_back_and_still_refuse_outside_checks():
    register, retain = Tensor.register_hook, Tensor.retain_grad
    st.check(RelevanceAttention, init={"dim": "C"})
    assert Tensor.register_hook is register and Tensor.retain_grad is retain
    with torch.no_grad():
        t = torch.ones(2, requires_grad=True) * 2
    try:
        t.register_hook(lambda g: g)
    except RuntimeError as exc:
        assert "register a hook" in str(exc)
    else:
        raise AssertionError("register_hook accepted a tensor without a gradient outside a check")


def test_hooks_on_tensors_that_take_gradients_still_run_in_checks():
    from shapetrace.behaviour.runs import gradient_hooks_accepted

    seen = []
    with gradient_hooks_accepted():
        x = torch.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(g.clone()))
        y.sum().backward()
    assert len(seen) == 1 and torch.equal(seen[0], torch.ones(3))
