"""Declaring sizes never loses a finding (SPEC section 2): at a student's own sizes,
``st.trace(model, dims=...)`` finds at least what ``st.trace(model)`` finds.

Every module of the rule zoo (``rule_models.py``: its buggy twins and its correct styles) is run
at sizes a student picks, where the sizes are composite and may coincide, once with nothing
declared and once with every size declared. Declared names may let the reading of a reshape
cut an axis by its size (T = 16 into four pieces), which must never make a jumble look like a
split.
"""

from __future__ import annotations

import inspect

import pytest
import torch

import rule_models as zoo
import shapetrace as st

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: a student's sizes: (B, T, C, H); the last has H = d = 8
SIZES = [pytest.param((2, 16, 32, 4), id="B2-T16-C32-H4"),
         pytest.param((4, 12, 48, 6), id="B4-T12-C48-H6"),
         pytest.param((2, 10, 64, 8), id="B2-T10-C64-H8-d8")]
SOURCE = {"x": ("B", "T", "C"), "context": ("B", "S", "C"), "target": ("B",)}



class JumbledSplit(zoo.Attention):
    """The heads split straight from (B, T, C): every shape right, tokens dealt across heads."""

    def heads(self, x):
        B, T, C = x.shape
        return tuple(p(x).reshape(B, self.n_head, T, C // self.n_head)
                     for p in (self.q_proj, self.k_proj, self.v_proj))


class MergedWithoutTranspose(zoo.Attention):
    """The heads merged back without moving them next to the width first."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        att = (q @ k.transpose(-2, -1) / self.head_size ** 0.5).softmax(-1)
        return self.out_proj((att @ v).reshape(B, T, C))


MODULES = [pytest.param(cls, id=name) for name, cls in [*vars(zoo).items(),
                                                        ("JumbledSplit", JumbledSplit),
                                                        ("MergedWithoutTranspose",
                                                         MergedWithoutTranspose)]
           if inspect.isclass(cls) and issubclass(cls, torch.nn.Module)
           and hasattr(cls, "INPUTS") and "n_head" in inspect.signature(cls).parameters]


def _run(cls, sizes, declare: bool):
    B, T, C, H = sizes
    named = {"B": B, "T": T, "S": T + 3, "C": C, "H": H}
    torch.manual_seed(0)
    model = cls(C, H)
    inputs = [torch.randn(*(named[n] for n in SOURCE[name])) for name in cls.INPUTS]
    dims = {k: v for k, v in named.items() if k != "S" or "context" in cls.INPUTS}
    with st.trace(model, dims=dims if declare else None) as t:
        try:
            model(*inputs)
        except Exception:  # noqa: BLE001 - an op that raises is a finding of its own
            pass
    return {(d.rule, d.line) for d in t.diagnostics if d.rule != "dim-collision"}


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("cls", MODULES)
def test_declared_sizes_find_at_least_as_much(cls, sizes):
    undeclared = _run(cls, sizes, declare=False)
    declared = _run(cls, sizes, declare=True)
    assert undeclared <= declared, f"lost when declared: {sorted(undeclared - declared)}"


def test_the_zoo_is_there():
    assert len(MODULES) > 40


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("cls", [JumbledSplit, MergedWithoutTranspose])
def test_a_jumble_is_found_declared_or_not(cls, sizes):
    assert ("reshape-jumble" in {rule for rule, _ in _run(cls, sizes, declare=True)})
    assert ("reshape-jumble" in {rule for rule, _ in _run(cls, sizes, declare=False)})
