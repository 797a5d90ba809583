"""A softmax's output read once for its own probe and for the product that takes it as
attention weights (``record.probes``): the product's weight sums are those of the weights as
they are when it runs, whether the softmax's reading stands for them or not."""

from __future__ import annotations

import math

import pytest
import torch

import shapetrace
from shapetrace.record.probes import weight_sums


def _product_sums(forward, *tensors):
    """The weight sums recorded on the last product, and what weight_sums reads of its weights
    (returned by ``forward``) after the block."""
    with shapetrace.trace() as t:
        out, weights, axis = forward(*tensors)
    product = [r for r in t.records if r.weight_sums][-1]
    return product.weight_sums[0], weight_sums(weights, (), (axis,))


def _attention(q, k, v):
    att = (q @ k.transpose(-2, -1)).softmax(dim=-1)
    return att @ v, att, 3


def _written_behind_the_trace(q, k, v):
    att = (q @ k.transpose(-2, -1)).softmax(dim=-1)
    with torch._C.DisableTorchFunction():  # unrecorded: only the tensor's version says so
        att.mul_(2)
    return att @ v, att, 3


def _other_axis(q, k, v):
    att = (q @ k.transpose(-2, -1)).softmax(dim=-2)
    return att @ v, att, 3


@pytest.mark.parametrize("forward", [_written_behind_the_trace, _other_axis])
def test_the_products_weight_sums_are_those_of_its_weights_as_they_are(forward):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    recorded, expected = _product_sums(forward, q, k, v)
    assert recorded == expected


def test_a_softmaxs_own_weights_are_known_to_sum_to_one():
    """The softmax's output as made, contracted over its axis: its probe's one sum found no NaN
    and no Inf, so its rows sum to 1 and no weight is negative (what the weights measure,
    within rounding), without reading them again."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    recorded, expected = _product_sums(_attention, q, k, v)
    assert set(recorded.deviations) == set(expected.deviations) == {3}
    assert recorded.deviations[3] == 0.0 and expected.deviations[3] < 1e-6
    assert recorded.minimum == 0.0 <= expected.minimum


def test_weights_written_after_the_softmax_are_not_read_as_normalised():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    recorded, _ = _product_sums(_written_behind_the_trace, q, k, v)
    assert math.isclose(recorded.deviations[3], 1.0, rel_tol=1e-5)  # rows sum to 2
    recorded, _ = _product_sums(_attention, q, k, v)
    assert recorded.deviations[3] < 1e-5


def test_weights_made_under_inference_mode_are_read_as_they_are():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    with torch.inference_mode():
        recorded, expected = _product_sums(_attention, q, k, v)
    assert recorded == expected


def test_only_the_latest_softmaxes_are_kept():
    from shapetrace.record.probes import SOFTMAX_DEPTH

    x = torch.randn(2, 5, 5)
    with shapetrace.trace(every_step=True) as t:
        for _ in range(3 * SOFTMAX_DEPTH):
            x.softmax(dim=-1)
        kept = len(t._recorder.probes.row_sums)
    assert 0 < kept <= SOFTMAX_DEPTH
