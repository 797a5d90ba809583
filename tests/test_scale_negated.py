"""Scores multiplied by a negative factor before the softmax (``scale = d * -0.5``, a typo of
``d ** -0.5``; keys negated) give the least similar keys the most weight: attention-textbook
says the scores are negated, at the line that applied the factor. Attention by distance (the
softmax of minus a distance, or of the L2 form 2q·k - |q|² - |k|²) stays quiet."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class Heads(nn.Module):
    def __init__(self, dim, heads=4, flip=None):
        super().__init__()
        self.heads, self.flip = heads, flip
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)

    def split(self, x):
        b, n, c = x.shape
        return self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)

    def merge(self, y):
        b, h, n, d = y.shape
        return self.out(y.transpose(1, 2).reshape(b, n, h * d))


class TypoScale(Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        scale = q.shape[-1] * -0.5
        q = q * scale
        attn = torch.einsum("bhid,bhjd->bhij", q, k).softmax(dim=-1)
        return self.merge(attn @ v)


class RightScale(Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        scale = q.shape[-1] ** -0.5
        q = q * scale
        attn = torch.einsum("bhid,bhjd->bhij", q, k).softmax(dim=-1)
        return self.merge(attn @ v)


class NegatedKeys(Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        k = -k
        attn = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(dim=-1)
        return self.merge(attn @ v)


class ByDistance(Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        attn = (-torch.cdist(q, k) * q.shape[-1] ** -0.5).softmax(dim=-1)
        return self.merge(attn @ v)


class ByL2(Heads):
    """softmax(-|q - k|² / √d), written out: (2 q·k - |q|² - |k|²) / √d."""

    def forward(self, x):
        q, k, v = self.split(x)
        dots = q @ k.transpose(-2, -1)
        sq = (q * q).sum(-1, keepdim=True) + (k * k).sum(-1).unsqueeze(-2)
        attn = ((2 * dots - sq) * q.shape[-1] ** -0.5).softmax(dim=-1)
        return self.merge(attn @ v)


def _check(cls):
    return st.check(cls, init={"dim": "C"}).targets[0]


def _line_of(cls, text):
    import inspect

    lines, start = inspect.getsourcelines(cls.forward)
    return next(start + i for i, line in enumerate(lines) if text in line)


def test_a_scale_typo_that_negates_the_scores_is_found_where_it_is_applied():
    result = _check(TypoScale)
    found = [d for d in result.diagnostics if d.rule == "attention-textbook"]
    assert len(found) == 1 and found[0].severity == "error"
    assert "negated" in found[0].message and "least similar" in found[0].message
    assert found[0].line == _line_of(TypoScale, "q = q * scale")
    assert "d ** -0.5" in found[0].hint


def test_negated_keys_are_found():
    found = [d for d in _check(NegatedKeys).diagnostics if d.rule == "attention-textbook"]
    assert found and "negated" in found[0].message


def test_the_right_scale_and_attention_by_distance_stay_quiet():
    for cls in (RightScale, ByDistance, ByL2):
        result = _check(cls)
        assert result.error is None, (cls.__name__, result.error)
        assert [d.rule for d in result.diagnostics if d.severity == "error"] == [], cls.__name__
