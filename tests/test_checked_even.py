"""A module that checks in its forward that its head size is even (``assert d % 2 == 0``, for
rotary pairs) gets an even one; past the check, a failure at an op on sizes the probe sizes make
is the code's own bug (keys and values viewed with the queries' count of heads where they have
their own, fewer), found at its line; the same module written right runs clean."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

import shapetrace as st


def rotate(x, cos, sin):
    half = x.size(-1) // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class GroupedRotary(nn.Module):
    """Grouped-query attention with rotary positions; ``kv_count`` names the count of heads keys
    and values are viewed with: their own is right, the queries' is the bug."""

    kv_count = "kv_heads"

    def __init__(self, d_model, n_heads, n_kv_heads=1):
        super().__init__()
        self.heads, self.kv_heads = n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * n_kv_heads * self.head_dim)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        d = self.head_dim
        assert d % 2 == 0, "head_dim must be even for rotary positions"
        freqs = torch.arange(t)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
        cos, sin = freqs.cos().repeat(1, 2), freqs.sin().repeat(1, 2)  # (T, d)
        q = self.q(x).view(b, t, self.heads, d)
        k, v = self.kv(x).view(b, t, 2, getattr(self, self.kv_count), d).unbind(2)
        q, k = rotate(q, cos[:, None], sin[:, None]), rotate(k, cos[:, None], sin[:, None])
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=2).transpose(1, 2)
        v = v.repeat_interleave(groups, dim=2).transpose(1, 2)
        q = q.transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(b, t, c))


class KeysViewedAsQueries(GroupedRotary):
    kv_count = "heads"


def test_a_checked_even_head_size_then_a_bug_is_the_bugs_finding():
    result = st.check(KeysViewedAsQueries).targets[0]
    assert result.error is None, result.error
    failed = [d for d in result.diagnostics if d.rule == "op-failed"]
    assert failed and failed[0].line == GroupedRotary.forward.__code__.co_firstlineno + 7, failed
    assert any(n.startswith("d=") and "the module's own check asks for an even size" in n
               for n in result.notes), result.notes


def test_the_module_written_right_runs_clean():
    result = st.check(GroupedRotary).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics


class RotaryBackbone(nn.Module):
    """A backbone whose constructor refuses an odd head size by a check of its own."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        assert (d_model // n_heads) % 2 == 0, "head_dim must be even for rotary positions"
        self.attn = GroupedRotary(d_model, n_heads)

    def forward(self, x):
        return self.attn(x)


class Evaluator(nn.Module):
    """Handed a built backbone (annotated with its class) and a head over its output."""

    def __init__(self, backbone: RotaryBackbone, d_model):
        super().__init__()
        self.backbone, self.head = backbone, nn.Linear(d_model, 1)

    def forward(self, x):
        return self.head(self.backbone(x)).squeeze(-1)


def test_a_module_argument_that_asks_for_an_even_head_size_gets_one():
    result = st.check(Evaluator).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("needs an even width" in n for n in result.notes), result.notes
