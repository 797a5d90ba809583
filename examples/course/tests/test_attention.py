"""Ordinary tests for the exercise, traced by shapetrace.

``@pytest.mark.shapetrace`` runs the whole test inside ``shapetrace.trace()``: a test whose
assertions pass still fails when the code it ran has an error-level finding. The ``shapetrace``
fixture is the explicit form: it traces only the blocks it is asked to, and gives the probe sizes.
"""

import pytest
import torch

from student.attention import MultiHeadAttention


def build(dims):
    return MultiHeadAttention(d_in=dims["C"], d_out=dims["C"], context_length=dims["L"],
                              dropout=0.0, num_heads=dims["H"]).eval()


@pytest.fixture
def model():
    """Built in the fixture, so a traced test records the forward pass, not the constructor."""
    torch.manual_seed(0)
    return build({"C": 143, "H": 11, "L": 23})


def test_output_shape(shapetrace):
    model = build(shapetrace.dims)
    x = shapetrace.input("x=B,T,C")
    with shapetrace.trace(model):
        out = model(x)
    assert out.shape == x.shape


@pytest.mark.shapetrace
def test_future_tokens_do_not_change_the_past(model):
    x = torch.randn(5, 7, 143)
    changed = x.clone()
    changed[:, -1] += 1.0  # change only the last token
    with torch.no_grad():
        assert torch.allclose(model(x)[:, :-1], model(changed)[:, :-1], atol=1e-5)
