"""The grader's own tests, traced: each submission run on a masked cross-attention batch."""

import importlib

import pytest
import torch

SUBMISSIONS = ["c_split", "w_plus_inf"]


def build(name):
    module = importlib.import_module(f"students.{name}")
    torch.manual_seed(0)
    return module.MultiHeadAttention(embed_dim=143, num_heads=11).eval()


def batch():
    query, memory = torch.randn(5, 7, 143), torch.randn(5, 17, 143)
    mask = torch.rand(7, 17) > 0.3
    mask[:, 0] = True  # every query keeps a key
    return query, memory, mask


@pytest.mark.parametrize("name", SUBMISSIONS)
@pytest.mark.shapetrace
def test_output_shape_marked(name):
    model = build(name)
    query, memory, mask = batch()
    assert model(query, memory, memory, mask).shape == query.shape


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_output_shape_fixture(name, shapetrace):
    model = build(name)
    query, memory, mask = batch()
    with shapetrace.trace(model):
        out = model(query, memory, memory, mask)
    assert out.shape == query.shape
