"""Padding hidden but still counted (``mask-ignored``): the same real tokens must give the same
output at those tokens however many padded positions follow them. A softmax that still weighs
padded keys whose values were zeroed, and a mean over every position of masked values, are
found at their lines; correct masking in other styles (an additive bias, SDPA, torch's
attention, a masked mean, attention pooling, a length-scaled score, a bidirectional LSTM, a
convolution past the last real token) stays quiet. And the readings this needs: a mask
multiplied into the values after ``unsqueeze(-1)`` is given (B, T); ``(1 - mask) * -1e4``
keeps the 1s, ``mask * -1e9`` drops them, ``key_padding_mask=mask`` drops them (``~mask``
keeps them)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace.analysis.masks import mask_meaning


def _errors(cls, **settings):
    result = st.check(cls, **settings).targets[0]
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.severity == "error"]


class CountsInMean(nn.Module):
    """Masked values, then a mean over every position."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attention_mask):
        h = self.proj(x) * attention_mask.unsqueeze(-1)
        return h.mean(dim=1)  # counted: every position


class ZeroedNotMasked(nn.Module):
    """Padded tokens zeroed before attention; their keys still take weight."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, attention_mask):
        n, t, c = x.shape
        x = x * attention_mask[..., None]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(n, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)  # counted
        return self.out((w @ v).transpose(1, 2).reshape(n, t, c))


class DividedByLength(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attention_mask):
        h = self.proj(x) * attention_mask.unsqueeze(-1).float()
        total = h.sum(dim=1)
        return total / x.shape[1]  # counted: the padded positions too


def _line(cls, marker: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(cls)
    return start + next(i for i, text in enumerate(lines) if marker in text)


@pytest.mark.parametrize("cls, init, said", [
    (CountsInMean, {"dim": "C"}, "averages over all"),
    (ZeroedNotMasked, {"dim": "C", "heads": "H"}, "a softmax over them"),
    (DividedByLength, {"dim": "C"}, "divides by the number of positions"),
])
def test_padding_hidden_but_counted_is_found_at_its_line(cls, init, said):
    found = [d for d in _errors(cls, init=init) if d.rule == "mask-ignored"]
    assert len(found) == 1, found
    marker = "# counted"
    assert found[0].line == _line(cls, marker)
    assert "not their number" in found[0].message and said in found[0].message


class MaskedMean(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attention_mask):
        m = attention_mask.unsqueeze(-1).float()
        return (self.proj(x) * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)


class AdditiveBias(nn.Module):
    def __init__(self, vocab, dim, heads, max_len):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, input_ids, attention_mask):
        n, t = input_ids.shape
        x = self.emb(input_ids) + self.pos[:, :t]
        q, k, v = self.qkv(self.norm(x)).chunk(3, -1)
        q, k, v = (z.view(n, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        w = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias).softmax(-1)
        return x + (w @ v).transpose(1, 2).reshape(n, t, -1)


class TorchAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x, key_padding_mask):
        return self.mha(x, x, x, key_padding_mask=key_padding_mask)[0]


class LengthScaled(nn.Module):
    """A score scaled by the log of the length (a design, not padding counted)."""

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, -1)
        s = q @ k.transpose(-1, -2) * math.log(x.shape[1]) / math.sqrt(q.shape[-1])
        s = s.masked_fill(mask[:, None, :] == 0, float("-inf"))
        return s.softmax(-1) @ v


class BiRecurrentMean(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.rnn = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)

    def forward(self, x, mask):
        h, _ = self.rnn(x * mask.unsqueeze(-1))
        m = mask.unsqueeze(-1)
        return (h * m).sum(1) / m.sum(1)


class MaskedPooling(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, x, mask):
        s = self.score(x).squeeze(-1).masked_fill(~mask.bool(), -1e9)
        return (x * torch.softmax(s, dim=1).unsqueeze(-1)).sum(1)


class ConvPastTheEnd(nn.Module):
    """A convolution reads the positions after the last real token (a bias there): a design
    this check does not judge."""

    def __init__(self, dim):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.conv = nn.Conv1d(dim, dim, 3, padding=1)

    def forward(self, x, mask):
        h = self.inp(x * mask.unsqueeze(-1))
        h = self.conv(h.transpose(1, 2)).transpose(1, 2)
        s = h.sum(-1).masked_fill(mask == 0, float("-inf"))
        return (h * s.softmax(-1).unsqueeze(-1)).sum(1)


class SdpaKeyPadding(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, key_padding_mask):
        n, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, -1)
        q, k, v = (z.view(n, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=~key_padding_mask[:, None, None, :])
        return y.transpose(1, 2).reshape(n, t, c)


@pytest.mark.parametrize("cls, init", [
    (MaskedMean, {"dim": "C"}),
    (AdditiveBias, {"vocab": "V", "dim": "C", "heads": "H", "max_len": "L"}),
    (TorchAttention, {"dim": "C", "heads": "H"}),
    (LengthScaled, {"dim": "C"}),
    (BiRecurrentMean, {"dim": "C"}),
    (MaskedPooling, {"dim": "C"}),
    (ConvPastTheEnd, {"dim": "C"}),
    (SdpaKeyPadding, {"dim": "C", "heads": "H"}),
])
def test_padding_neither_seen_nor_counted_stays_quiet(cls, init):
    assert _errors(cls, init=init) == []


def test_the_padded_run_is_checked_on_a_correct_module():
    """The check runs (not skipped) where the mask is read: a mean over every position of
    masked values is the one change between a quiet module and a finding."""
    assert _errors(MaskedMean, init={"dim": "C"}) == []
    assert [d.rule for d in _errors(CountsInMean, init={"dim": "C"})] == ["mask-ignored"]


def test_a_mask_multiplied_after_unsqueeze_is_given_one_value_per_position():
    result = st.check(MaskedMean, init={"dim": "C"}).targets[0]
    assert result.error is None
    assert any("one value per position, (B, T)" in n for n in result.notes)


def _bias_keeps(scores, mask):
    return scores + (1.0 - mask.float()) * -10000.0


def _bias_drops(scores, mask):
    return scores + mask * -1e9


def _finfo_drops(scores, mask):
    return scores + mask * torch.finfo(scores.dtype).min


def _torch_drops(x, mask, layer):
    return layer(x, x, x, key_padding_mask=mask)


def _torch_keeps(x, mask, layer):
    return layer(x, x, x, key_padding_mask=~mask)


def _sdpa_drops(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)


def _multiplied(x, mask):
    return x * mask


@pytest.mark.parametrize("func, meaning", [
    (_bias_keeps, "keep"), (_bias_drops, "drop"), (_finfo_drops, "drop"),
    (_torch_drops, "drop"), (_torch_keeps, "keep"), (_sdpa_drops, "drop"), (_multiplied, "mul"),
])
def test_mask_meanings_read_from_arithmetic_and_torch_keywords(func, meaning):
    assert mask_meaning(func, "mask") == meaning
