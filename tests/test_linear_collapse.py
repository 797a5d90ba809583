"""linear-collapse: two linear layers with nothing nonlinear between them and a wider middle are
one linear map (a feed-forward without its activation); an activation, a gate, a narrower middle,
a scale that is an input of the forward, a projection across another axis and attention stay
quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import shapetrace as st
from tests.data.linear_chain import models

SOURCE = Path(models.__file__).read_text().splitlines()


def _marked(cls) -> int:
    start = SOURCE.index(next(line for line in SOURCE if line.startswith(f"class {cls.__name__}(")))
    return next(i + 1 for i in range(start, len(SOURCE)) if "# HERE" in SOURCE[i])


def _findings(model, *inputs):
    model.eval()
    with torch.no_grad(), st.trace(model) as t:
        model(*inputs)
    return [d for d in t.diagnostics if d.rule == "linear-collapse"]


x = torch.randn(2, 7, 6)


@pytest.mark.parametrize("model", [models.NoActivation(6, 0.1), models.SequentialWithoutActivation(6),
                                   models.ScaledHidden(6)], ids=type)
def test_two_linear_layers_without_a_nonlinearity_are_found_at_their_line(model):
    found = _findings(model, x)
    assert len(found) == 1, found
    assert found[0].line == _marked(type(model)), found[0]
    assert found[0].severity == "error"
    assert "one linear map" in found[0].message


@pytest.mark.parametrize("model, inputs", [
    (models.WithActivation(6), (x,)),
    (models.SwiGLU(6, 16), (x,)),
    (models.LowRank(6), (x,)),
    (models.Modulated(6), (x, torch.rand(2, 7, 24))),
    (models.AcrossPositions(6, 7), (x,)),
    (models.Attention(6), (x,)),
    (torch.nn.TransformerEncoderLayer(6, 2, 24, batch_first=True), (x,)),
    (torch.nn.MultiheadAttention(6, 2, batch_first=True), (x, x, x)),
], ids=lambda v: type(v).__name__ if isinstance(v, torch.nn.Module) else "")
def test_correct_modules_stay_quiet(model, inputs):
    assert _findings(model, *inputs) == []


def test_the_check_finds_it_without_anything_declared():
    result = st.check(models.NoActivation).targets[0]
    assert result.error is None, result.error
    assert [d.line for d in result.diagnostics if d.rule == "linear-collapse"] == \
        [_marked(models.NoActivation)]
