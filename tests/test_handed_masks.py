"""Masks read where the code uses them, with nothing declared: a mask forward requires, or one
whose default of None forward cannot take, is made with the meaning read in the code forward
hands it to (a static helper, a submodule built in the constructor or handed in annotated, in a
lambda or not, the layers of a stack forward loops over, reshaped on a line of its own first),
at another shape when the first one does not fit; a module whose mask code is wrong is still
caught."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.analysis.handed import element_class, handed, submodule_class
from shapetrace.drive.masks import handed_meaning, read_unguarded

INIT = {"width": "C", "heads": "H"}


class Heads(nn.Module):
    """Attention whose masking lives in a static helper; the mask is required."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (nn.Linear(width, width) for _ in range(3))
        self.o = nn.Linear(width, width)

    @staticmethod
    def scores_of(q, k, keep, fill):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if keep is not None:
            s = s.masked_fill(keep == 0, fill)
        return s.softmax(-1)

    def split(self, t):
        n, length, width = t.shape
        return t.view(n, length, self.heads, width // self.heads).transpose(1, 2)

    def forward(self, query, key, value, keep):
        q, k, v = self.split(self.q(query)), self.split(self.k(key)), self.split(self.v(value))
        out = Heads.scores_of(q, k, keep, -1e9) @ v
        return self.o(out.transpose(1, 2).reshape(query.shape))


class WrongFill(Heads):
    """Fills the masked scores with +inf: every masked row turns to NaN."""

    def forward(self, query, key, value, keep):
        q, k, v = self.split(self.q(query)), self.split(self.k(key)), self.split(self.v(value))
        out = Heads.scores_of(q, k, keep, float("inf")) @ v
        return self.o(out.transpose(1, 2).reshape(query.shape))


class Wrapper(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)

    def forward(self, x, sub):
        return x + sub(self.norm(x))


class Layer(nn.Module):
    """A layer handed its attention, annotated, that calls it in a lambda with its mask."""

    def __init__(self, width: int, attention: Heads):
        super().__init__()
        self.attention = attention
        self.wrap = Wrapper(width)

    def forward(self, x, pad_mask):
        return self.wrap(x, lambda y: self.attention(y, y, y, pad_mask))


class Scores(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, q, k, v, mask=None):
        s = torch.bmm(q, k.transpose(1, 2)) / self.scale
        if mask is not None:
            s = s.masked_fill(mask, -torch.inf)
        return torch.bmm(s.softmax(-1), v)


class FoldedHeads(nn.Module):
    """Heads folded into the batch, the mask repeated per head before the scores module built
    in the constructor: a default of None that forward reads unguarded, and a mask of one row
    per sample, (B, T, S)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.scores = Scores(self.size ** 0.5)

    def forward(self, x, mask=None):
        n, length, width = x.shape
        q, k, v = (t.reshape(n, length, self.heads, self.size).permute(2, 0, 1, 3)
                   .reshape(-1, length, self.size) for t in self.qkv(x).chunk(3, -1))
        mask = mask.repeat(self.heads, 1, 1)
        out = self.scores(q, k, v, mask=mask)
        return out.view(self.heads, n, length, self.size).permute(1, 2, 0, 3).reshape(x.shape)


def test_the_meaning_is_read_where_the_mask_is_handed():
    assert handed_meaning(Heads.forward, "keep", Heads) == ("keep", True)
    assert handed_meaning(Layer.forward, "pad_mask", Layer) == ("keep", True)
    assert handed_meaning(FoldedHeads.forward, "mask", FoldedHeads) == ("drop", True)
    assert submodule_class(Layer, "attention") is Heads
    assert submodule_class(FoldedHeads, "scores") is Scores
    assert submodule_class(Layer, "missing") is None
    reached = {(f.__qualname__, name) for f, name in handed(Layer.forward, "pad_mask", Layer)}
    assert ("Heads.scores_of", "keep") in reached


def test_an_unresolved_callee_says_nothing():
    def forward(x, mask, helper=None):
        return helper(x, mask)

    assert handed_meaning(forward, "mask") == (None, False)


def test_a_read_under_no_condition_is_seen():
    assert read_unguarded(FoldedHeads.forward, "mask")
    assert not read_unguarded(Heads.forward, "keep")


def test_a_required_mask_handed_to_a_static_helper_is_made_and_checked():
    result = st.check(Heads, init=INIT).targets[0]
    assert result.ok and result.error is None, (result.error, result.diagnostics)
    assert any("keep None (which its code tests for)" in n for n in result.notes)


def test_wrong_mask_code_reached_that_way_is_caught():
    result = st.check(WrongFill, init=INIT).targets[0]
    assert result.error is None
    assert "non-finite" in {d.rule for d in result.diagnostics if d.severity == "error"}


def test_a_mask_handed_to_an_annotated_submodule_in_a_lambda():
    result = st.check(Layer, init={"width": "C", "attention": Heads(143, 11)}).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


def test_a_default_none_read_unguarded_gets_a_mask_of_another_shape_and_no_finding():
    result = st.check(FoldedHeads, init=INIT).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("mask given as mask=B,T,T:mask-drop" in n for n in result.notes), result.notes
    assert not any("None" in n for n in result.notes)


# --- a mask handed to the layers of a stack -----------------------------------------------------

def _stacks():
    from pathlib import Path

    from style_corpus import load

    return load(Path(__file__).with_name("data") / "handed" / "stacks.py", "handed_stacks")


def test_the_layers_of_a_stack_are_read_as_their_constructor_builds_them():
    stacks = _stacks()
    for name in ("ComprehensionStack", "CopiedStack", "SequentialStack"):
        assert element_class(getattr(stacks, name), "layers") is stacks.Layer, name
    assert element_class(stacks.MixedStack, "layers") is None


def test_a_mask_reshaped_and_handed_to_a_stack_is_read_there_and_checked():
    stacks = _stacks()
    for name in ("ComprehensionStack", "CopiedStack", "SequentialStack"):
        cls = getattr(stacks, name)
        assert handed_meaning(cls.forward, "mask", cls)[0] == "drop", name
        result = st.check(cls, init={"width": "C", "heads": "H"}).targets[0]
        assert result.error is None and result.ok, (name, result.error, result.diagnostics)
        assert any(n.startswith("mask given as mask=B,") and ":mask-drop" in n
                   for n in result.notes), (name, result.notes)
    assert handed_meaning(stacks.MixedStack.forward, "mask", stacks.MixedStack)[0] is None


def test_a_mask_handed_to_a_method_of_a_submodule_or_of_a_new_object_is_read_there():
    stacks = _stacks()
    for name in ("MethodOfASubmodule", "MethodOfANewObject"):
        cls = getattr(stacks, name)
        assert handed_meaning(cls.forward, "mask", cls)[0] == "keep", name
        result = st.check(cls, init={"width": "C", "heads": "H"}).targets[0]
        assert result.error is None and result.ok, (name, result.error, result.diagnostics)
