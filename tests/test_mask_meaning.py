"""A mask's meaning declared per input (``attn_mask=T,S:mask-keep`` / ``mask-drop`` /
``mask-add``): parsed, written back, and the masks made follow it, so that no finding comes from
a polarity shapetrace chose."""

from __future__ import annotations

import pytest
import torch

from shapetrace.base.errors import UsageError
from shapetrace.base.specs import make_input, parse_input

DIMS = {"B": 5, "T": 7, "S": 17}


@pytest.mark.parametrize("text, dtype, meaning", [
    ("attn_mask=T,S:mask-keep", "bool", "keep"),
    ("mask=B,T,S:mask-drop", "bool", "drop"),
    ("bias=T,S:mask-add", "float", "add"),
])
def test_a_mask_meaning_is_parsed_and_written_back(text, dtype, meaning):
    spec = parse_input(text, DIMS)
    assert (spec.dtype, spec.mask) == (dtype, meaning)
    assert str(spec) == text and parse_input(str(spec)) == spec


def test_nothing_follows_a_mask_meaning():
    with pytest.raises(UsageError, match="nothing follows"):
        parse_input("m=T,S:mask-keep:V")


@pytest.mark.parametrize("dims", ["T,S", "B,T,S", "T,T"])
def test_masks_follow_their_meaning_and_every_query_keeps_a_key(dims):
    g = torch.Generator().manual_seed(0)
    keep = make_input(parse_input(f"m={dims}:mask-keep"), DIMS, generator=g)
    g = torch.Generator().manual_seed(0)
    drop = make_input(parse_input(f"m={dims}:mask-drop"), DIMS, generator=g)
    g = torch.Generator().manual_seed(0)
    add = make_input(parse_input(f"m={dims}:mask-add"), DIMS, generator=g)
    assert keep.dtype == drop.dtype == torch.bool and add.dtype == torch.float32
    assert torch.equal(drop, ~keep)
    assert torch.equal(add == 0, keep) and bool((add[~keep] == float("-inf")).all())
    assert bool(keep.any(-1).all())  # no query with every key masked
    assert not bool(keep.all())  # something is masked, so mask code is seen at work


# --- read from the code, with nothing declared --------------------------------------------------

import math  # noqa: E402

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import shapetrace as st  # noqa: E402
from shapetrace.analysis.masks import mask_meaning  # noqa: E402


def _keep(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return scores


def _keep_inverted(scores, mask=None):
    return scores if mask is None else scores.masked_fill(~mask, -1e9)


def _drop(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return scores


def _additive(scores, mask=None):
    if mask is not None:
        scores = scores + mask
    return scores


def _sdpa(q, k, v, attn_mask=None):
    m = attn_mask.bool() if attn_mask is not None else None
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


def _both(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf")).masked_fill(mask == 0, 0.0)
    return scores


@pytest.mark.parametrize("forward, name, meaning", [
    (_keep, "mask", "keep"), (_keep_inverted, "mask", "keep"), (_drop, "mask", "drop"),
    (_additive, "mask", "add"), (_sdpa, "attn_mask", "keep"), (_both, "mask", None),
])
def test_the_meaning_is_read_from_how_the_code_uses_the_mask(forward, name, meaning):
    assert mask_meaning(forward, name) == meaning


class _Attention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)

    def heads(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        return q, k, v, q @ k.transpose(-2, -1) / math.sqrt(C // self.h)

    def out(self, scores, v, x):
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape)


class KeepMask(_Attention):
    def forward(self, x, mask=None):
        q, k, v, scores = self.heads(x)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        return self.out(scores, v, x)


class DropMask(_Attention):
    def forward(self, x, mask=None):
        q, k, v, scores = self.heads(x)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        return self.out(scores, v, x)


class PlusInfMask(_Attention):
    def forward(self, x, mask=None):
        q, k, v, scores = self.heads(x)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("inf"))
        return self.out(scores, v, x)


class PaddingMask(_Attention):
    def forward(self, x, mask=None):
        q, k, v, scores = self.heads(x)
        if mask is not None:  # (B, T): one mask per sample
            scores = scores.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
        return self.out(scores, v, x)


class TimeFirstMask(_Attention):
    def forward(self, x, mask=None):
        q, k, v, scores = self.heads(x)
        if mask is not None:  # (T, B) read as it is: a shape no guess gives
            if mask.dim() == 2 and mask.shape[0] != x.shape[1]:
                raise ValueError("the mask is time-first")
            scores = scores.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
        return self.out(scores, v, x)


@pytest.mark.parametrize("module", [KeepMask, DropMask])
def test_either_convention_is_clean_with_its_own_mask(module):
    """The mask made means what the code reads in it: a causal pattern of the other meaning
    would mask every key of the last query, and NaN would be a false alarm."""
    result = st.check(module, init={"embed_dim": "C", "num_heads": "H"}).targets[0]
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


def test_an_optional_mask_is_given_so_its_code_is_checked():
    result = st.check(PlusInfMask, init={"embed_dim": "C", "num_heads": "H"}).targets[0]
    assert "non-finite" in {d.rule for d in result.diagnostics if d.severity == "error"}


def test_a_mask_per_sample_is_given_so():
    result = st.check(PaddingMask, init={"embed_dim": "C", "num_heads": "H"}).targets[0]
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("mask given as mask=B,T:mask-keep" in n for n in result.notes), result.notes


def test_a_mask_of_a_shape_no_guess_gives_is_left_none():
    result = st.check(TimeFirstMask, init={"embed_dim": "C", "num_heads": "H"}).targets[0]
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("mask left None: the forward failed" in n for n in result.notes), result.notes


class NeedsItsMask(_Attention):
    def forward(self, x, mask=None):
        q, k, v, scores = self.heads(x)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        out = self.out(scores, v, x)
        return out * mask.any(-1, keepdim=True)  # BUG: mask None


def test_an_optional_mask_is_checked_absent_too():
    result = st.check(NeedsItsMask, init={"embed_dim": "C", "num_heads": "H"}).targets[0]
    (found,) = [d for d in result.diagnostics if d.severity == "error"]
    assert found.rule == "op-failed" and "with mask None (its default)" in found.message
    assert found.line == next(i for i, line in enumerate(
        open(__file__).read().splitlines(), 1) if "# BUG: mask None" in line)


@pytest.mark.parametrize("module", [KeepMask, DropMask])
def test_an_optional_mask_that_works_both_ways_says_so(module):
    result = st.check(module, init={"embed_dim": "C", "num_heads": "H"}).targets[0]
    assert any("with mask None (its default)" in n for n in result.notes)
