"""Padding the code marks itself, and masks handed to torch's attention (``mask-ignored``).

A module given only tokens says which of them are padding when its embedding names a
``padding_idx`` and its forward compares the tokens with that id: the same real tokens must
then give the same output at those tokens however many padded tokens follow them. A padding
mask made and never handed to the attention is found at the call that left it out; a mask
handed on, scores filled, a causal model padded on the right, a [MASK] id swapped for a learned
vector, a token dropout of another id and positions counted past the padding id (the
comparison hides nothing) stay quiet. And torch's whole attention
(``nn.MultiheadAttention``, ``nn.TransformerEncoder``) is an attention the mask check judges: a
mask declared True = real handed to it as ``key_padding_mask`` (True = ignore) is found at the
call, turned with ``~`` it is clean."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn as nn

import shapetrace as st


def _errors(cls, **settings):
    result = st.check(cls, **settings).targets[0]
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.severity == "error"]


def _line(cls, marker: str) -> int:
    lines, start = inspect.getsourcelines(cls)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _encoder(dim, heads, layers=1):
    layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class PaddingMadeNotPassed(nn.Module):
    """The padded embeddings zeroed; the encoder never told which keys they are."""

    def __init__(self, vocab, dim, heads, pad_id=1):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.encoder = _encoder(dim, heads)

    def forward(self, tokens):
        pad = tokens.eq(self.pad_id)
        h = self.embed(tokens) * (~pad).unsqueeze(-1).float()
        return self.encoder(h)  # left out


class PaddingPassed(PaddingMadeNotPassed):
    def forward(self, tokens):
        pad = tokens.eq(self.pad_id)
        h = self.embed(tokens) * (~pad).unsqueeze(-1).float()
        return self.encoder(h, src_key_padding_mask=pad)


class MeanOverPadding(nn.Module):
    """Own attention hides the padded keys, then a mean over every position counts them."""

    def __init__(self, vocab, dim, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, tokens):
        q, k, v = self.qkv(self.embed(tokens)).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill((tokens == self.pad_id)[:, None, :], float("-inf"))
        h = scores.softmax(-1) @ v
        return h.mean(dim=1)  # counted


class ScoresFilled(MeanOverPadding):
    def forward(self, tokens):
        q, k, v = self.qkv(self.embed(tokens)).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill((tokens == self.pad_id)[:, None, :], float("-inf"))
        return scores.softmax(-1) @ v


class CausalPaddedRight(nn.Module):
    """A decoder: padding after the real tokens is never seen by them."""

    def __init__(self, vocab, dim, heads, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, tokens):
        n, t = tokens.shape
        real = tokens.ne(self.pad_id).unsqueeze(-1).float()
        x = self.embed(tokens) * real
        q, k, v = (z.view(n, t, self.heads, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, -1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        w = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        return (w @ v).transpose(1, 2).reshape(n, t, -1)


class MaskTokenSwapped(nn.Module):
    """A [MASK] id swapped for a learned vector: those positions are real."""

    def __init__(self, vocab, dim, heads, mask_id=3):
        super().__init__()
        self.mask_id = mask_id
        self.embed = nn.Embedding(vocab, dim)
        self.mask_vec = nn.Parameter(torch.randn(dim))
        self.encoder = _encoder(dim, heads)

    def forward(self, tokens):
        h = torch.where((tokens == self.mask_id).unsqueeze(-1), self.mask_vec, self.embed(tokens))
        return self.encoder(h)


class TokenDropoutOfMaskId(nn.Module):
    """A [MASK] id's embedding zeroed (token dropout) but attended; padding handed on."""

    def __init__(self, vocab, dim, heads, pad_id=1, mask_id=2):
        super().__init__()
        self.pad_id, self.mask_id = pad_id, mask_id
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.encoder = _encoder(dim, heads)

    def forward(self, tokens):
        h = self.embed(tokens).masked_fill((tokens == self.mask_id).unsqueeze(-1), 0.0)
        return self.encoder(h, src_key_padding_mask=tokens.eq(self.pad_id))


class PositionsCountedFromPadding(nn.Module):
    """Positions counted past the padding id (``cumsum(m) * m``): the comparison counts
    positions, it hides nothing; hiding the padding is the caller's, through the mask."""

    def __init__(self, vocab, dim, heads, pad_id=1, max_len=64):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.positions = nn.Embedding(max_len, dim, padding_idx=pad_id)
        self.encoder = _encoder(dim, heads)

    def forward(self, tokens, attention_mask=None):
        real = tokens.ne(self.pad_id).int()
        positions = torch.cumsum(real, dim=1) * real + self.pad_id
        h = self.embed(tokens) + self.positions(positions.long())
        hidden = None if attention_mask is None else attention_mask == 0
        return self.encoder(h, src_key_padding_mask=hidden)


TOKENS = {"vocab": "V", "dim": "C"}


def test_a_padding_mask_made_from_the_tokens_and_never_handed_on_is_found_at_the_call():
    found = _errors(PaddingMadeNotPassed, init={**TOKENS, "heads": "H"})
    assert [d.rule for d in found] == ["mask-ignored"], found
    assert found[0].line == _line(PaddingMadeNotPassed, "# left out")
    message = found[0].message
    assert "padding by the code's own reading" in message and "tokens.eq(self.pad_id)" in message
    assert "weighs all" in message


def test_a_mean_over_positions_the_code_marks_as_padding_is_found_at_its_line():
    found = _errors(MeanOverPadding, init=TOKENS)
    assert [(d.rule, d.line) for d in found] == [("mask-ignored",
                                                  _line(MeanOverPadding, "# counted"))]
    assert "averages over all" in found[0].message


@pytest.mark.parametrize("cls, init", [
    (PaddingPassed, {**TOKENS, "heads": "H"}),
    (ScoresFilled, TOKENS),
    (CausalPaddedRight, {**TOKENS, "heads": "H"}),
    (MaskTokenSwapped, {**TOKENS, "heads": "H"}),
    (TokenDropoutOfMaskId, {**TOKENS, "heads": "H"}),
    (PositionsCountedFromPadding, {**TOKENS, "heads": "H"}),
])
def test_padding_the_code_hides_or_does_not_mark_stays_quiet(cls, init):
    assert _errors(cls, init=init) == []


class KeepMaskToTorch(nn.Module):
    """Callers pass True = a real token; torch reads True as a key to ignore."""

    def __init__(self, dim, heads):
        super().__init__()
        self.encoder = _encoder(dim, heads, layers=2)

    def forward(self, inputs, mask):
        return self.encoder(inputs, src_key_padding_mask=mask)  # handed as it is


class KeepMaskTurned(KeepMaskToTorch):
    def forward(self, inputs, mask):
        return self.encoder(inputs, src_key_padding_mask=~mask)


class KeepMaskToAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x, mask):
        return self.attn(x, x, x, key_padding_mask=mask)[0]  # handed as it is


DECLARED = {"init": {"dim": "C", "heads": "H"}, "inputs": ["x=B,T,C", "mask=B,T:mask-keep"]}


@pytest.mark.parametrize("cls", [KeepMaskToTorch, KeepMaskToAttention])
def test_a_declared_keep_mask_handed_to_torch_as_it_is_is_found_at_the_call(cls):
    found = _errors(cls, **DECLARED)
    assert [(d.rule, d.line) for d in found] == [("mask-ignored", _line(cls, "# handed as it is"))]
    assert "reads it the other way" in found[0].message
    assert "~mask" in found[0].hint


def test_a_declared_keep_mask_turned_before_torch_is_clean():
    assert _errors(KeepMaskTurned, **DECLARED) == []
