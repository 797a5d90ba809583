"""head-grouping on the corpus's grouped-query styles (tests/data/styles/grouped.py and
grouped_layouts.py): copies of the key/value heads made by ``torch.stack`` are read like
``repeat`` and named at the stack's line, a stack of different tensors is no copy, the message
names the tensor whose heads are tiled, and the hint's rewritten line, pasted over the user's
line, makes the module clean (a flat projection gets no rewrite that would copy features).
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest
import torch
import torch.nn as nn

import shapetrace as st
from style_corpus import STYLES, assert_found_once, check, load, modules, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _grouped_layouts():
    return load(STYLES / "grouped_layouts.py", "grouping")


def test_stacked_copies_are_read_like_repeat():
    """``torch.stack([v] * G, dim=2).flatten(2, 3)`` on (B, T, Hkv, d) tiles the key/value heads;
    the finding names the stack's line, and the same stack at the inner axis is quiet."""
    gqa = _grouped_layouts()
    report, found = assert_found_once(gqa.StackedCopiesOutermost)
    assert found.op == "torch.stack", show(report)
    assert not [d for d in check(gqa.StackedCopiesInnermost).diagnostics if d.rule == "head-grouping"]


def test_stack_of_different_tensors_is_not_read_as_copies():
    """q, k and v stacked and unbound: no copy index, nothing to say about grouping."""

    class StackedQKV(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(78, 78) for _ in range(3))

        def forward(self, x):
            B, T, _ = x.shape
            qkv = torch.stack([self.q(x), self.k(x), self.v(x)], dim=0).view(3, B, T, 6, 13)
            q, k, v = qkv.transpose(2, 3).unbind(0)
            return (q @ k.transpose(-2, -1) / 13 ** 0.5).softmax(-1) @ v

    with st.trace() as t:
        StackedQKV()(torch.randn(5, 7, 78))
    assert not [d for d in t.diagnostics if d.rule == "head-grouping"], t.diagnostics


def test_a_list_of_copies_is_named_by_its_tensor():
    report, found = assert_found_once(_grouped_layouts().StackedCopiesOutermost)
    assert found.message.startswith("v is repeated as whole blocks"), found.message


def test_flat_projection_tiled_gets_no_rewrite_that_copies_features():
    """``t.repeat(1, 1, G)`` on a flat (B, T, Hkv*d) projection: repeat_interleave along that axis
    would copy single features, not heads, so the hint says to split the heads off first."""
    report, found = assert_found_once(_grouped_layouts().FlatProjectionTiled)
    assert "repeat_interleave(self.h" not in found.hint and "split the 2 heads" in found.hint
    assert found.message.startswith("t is repeated as whole blocks")


# --- the hint's rewritten line, pasted back ---------------------------------------------------

def _pasted_back(cls, tmp_path):
    """``cls`` loaded from a copy of its file whose flagged line is the hint's rewrite."""
    (found,) = [d for d in check(cls, behaviour=False).diagnostics if d.rule == "head-grouping"]
    number, _, fixed = found.hint.partition(": ")[2].partition("  ")
    assert int(number) == found.line
    path = Path(inspect.getsourcefile(cls))
    lines = path.read_text().splitlines()
    old = lines[found.line - 1]
    lines[found.line - 1] = old[:len(old) - len(old.lstrip())] + fixed
    copy = tmp_path / path.name
    copy.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"fixed_{path.stem}_{cls.__name__}", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, cls.__name__)


def _fixable():
    for param in modules([STYLES / "grouped.py"], "buggy", "grouping"):
        if param.values[0].__name__ != "TiledExpand":
            yield param


@pytest.mark.parametrize("cls", list(_fixable()))
def test_head_grouping_hint_pasted_back_makes_the_module_clean(cls, tmp_path):
    """The hint carries the user's line rewritten; pasting it over the line fixes the bug."""
    report = check(_pasted_back(cls, tmp_path), behaviour=False)
    assert not [d for d in report.diagnostics if d.rule == "head-grouping"], show(report)
    assert not report.errors, show(report)


@pytest.mark.parametrize("name", ["TimeMajorTiledRepeat", "StackedCopiesOutermost", "TorchTile"])
def test_head_grouping_rewrite_pasted_back_makes_the_module_clean(name, tmp_path):
    report = check(_pasted_back(getattr(_grouped_layouts(), name), tmp_path), behaviour=False)
    assert not [d for d in report.diagnostics if d.rule == "head-grouping"], show(report)
    assert not report.errors, show(report)
