"""Forward inputs no name explains, read from the layer of the built module that forward first
hands them to: a time vector through a small network of an image block (a vector per sample,
(B, C)), a style vector of a width of its own ((B, 24)), a condition behind dropout and a norm,
a class id into a table (ids below its size). Beside them: a switch forward only tests (False),
a timestep alone, and constructor sizes that are only factors of an output's size (2). Each
module is checked and clean with nothing declared, and says what it read."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import torch.nn as nn

from shapetrace.base.dims import Dims
from shapetrace.drive.built_reads import built_on_meta, spec_by_built
import resolved

DATA = Path(__file__).parent / "data" / "built"


_check = partial(resolved.result, DATA / "conditioned.py")


@pytest.mark.parametrize("cls, read", [("TimedConvBlock", "time_vec read as (B, C)"),
                                       ("StyledMixer", "s_vec read as (B, 24)"),
                                       ("PooledCondition", "c_vec read as (B, 24)"),
                                       ("ClassTable", "which read as (B, T)"),
                                       ("PatchOut", "out_channels read as a factor of an output's size only"),
                                       ("TimeFeatures", None)])
def test_an_input_is_read_from_the_layer_it_is_handed_to(cls, read):
    result = _check(cls)
    assert result.error is None, result.error
    assert not result.diagnostics, [(d.rule, d.line, d.message) for d in result.diagnostics]
    assert read is None or any(read in note for note in result.notes), result.notes


class _Reads(nn.Module):
    def __init__(self):
        super().__init__()
        self.signal = nn.Conv1d(6, 8, 3)
        self.picture = nn.Sequential(nn.ReLU(), nn.Conv2d(5, 8, 3))
        self.table = nn.Embedding(12, 8)
        self.mine = _Own()

    def forward(self, a, b, c, d):
        return self.signal(a), self.picture(b), self.table(c), self.mine(d)


class _Own(nn.Module):
    def forward(self, d):
        return d


def test_each_kind_of_layer_gives_its_shape():
    model = built_on_meta(_Reads, {})
    assert next(model.parameters()).is_meta
    dims = Dims()
    shown = {name: str(spec_by_built(name, _Reads.forward, model, dims)) for name in "abcd"}
    assert shown == {"a": "a=B,6,T", "b": "b=B,5,8,8", "c": "c=B,T:long:12", "d": "None"}
