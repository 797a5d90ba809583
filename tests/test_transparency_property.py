"""Tracing changes nothing: random chains of tensor ops (in-place ops, views of the inputs,
transposes and reshapes, matmul, softmax, dropout and other uses of the random generator) give
bit-identical values, gradients and global random state with and without ``shapetrace.trace()``
around them."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import shapetrace


def _rows_dropped(h, x):
    return h[1:] if h.shape[0] > 1 else h


def _matmul(h, x):
    w = torch.randn(h.shape[-1], 3, dtype=h.dtype)  # draws from the global generator
    return h @ w


def _view_flat(h, x):
    return h.reshape(-1).view(h.shape[1], h.shape[0])  # a view of a fresh (contiguous) tensor


def _input_view(h, x):
    """Combine with a view of the input: its first rows and columns, transposed."""
    v = x.T[: h.shape[0], : h.shape[1]] if x.shape[1] >= h.shape[0] and x.shape[0] >= h.shape[1] \
        else x[: h.shape[0], : h.shape[1]]
    if v.shape != h.shape:
        return h
    return h + v


def _in_place_through_view(h, x):
    h = h.clone()
    if h.shape[0] > 1:
        h[1:].mul_(2.0)  # in place, through a view of h
    return h


def _masked_fill_(h, x):
    h = h * 1.0
    return h.masked_fill_(h > 0.3, -1.0)


def _scores(h, x):
    return (h @ h.transpose(-2, -1)) / h.shape[-1] ** 0.5


OPS = {
    "add_": lambda h, x: (h * 1.0).add_(1.5),
    "mul_": lambda h, x: (h * 1.0).mul_(0.5),
    "relu_": lambda h, x: (h * 1.0).relu_(),
    "masked_fill_": _masked_fill_,
    "in-place-through-view": _in_place_through_view,
    "rows[1:]": _rows_dropped,
    ".T": lambda h, x: h.T,
    "transpose": lambda h, x: h.transpose(0, 1),
    "reshape": lambda h, x: h.reshape(h.shape[1], h.shape[0]),
    "view": _view_flat,
    "contiguous": lambda h, x: h.contiguous(),
    "input-view": _input_view,
    "matmul": _matmul,
    "scores": _scores,
    "softmax": lambda h, x: h.softmax(-1),
    "F.softmax-dim0": lambda h, x: F.softmax(h, dim=0),
    "dropout-train": lambda h, x: F.dropout(h, 0.3, training=True),
    "rand_like": lambda h, x: h * torch.rand_like(h),
    "randn-noise": lambda h, x: h + 0.1 * torch.randn(h.shape, dtype=h.dtype),
    "tanh": lambda h, x: torch.tanh(h),
    "sum-keepdim": lambda h, x: h - h.sum(-1, keepdim=True),
}


def _run(chain: list[str], shape: tuple[int, int], dtype, seed: int, traced: bool):
    """The chain from a seeded input: its output, the input's gradient, the random state after."""
    torch.manual_seed(seed)
    x = torch.randn(*shape, dtype=dtype, requires_grad=True)
    context = shapetrace.trace() if traced else _Nothing()
    with context:
        h = x * 1.0
        for name in chain:
            h = OPS[name](h, x)
        loss = (h * torch.linspace(-1, 1, h.numel(), dtype=h.dtype).view(h.shape)).sum()
        loss.backward()
    return h.detach(), x.grad, torch.get_rng_state()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@settings(max_examples=60, deadline=None)
@given(chain=st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=10),
       shape=st.tuples(st.integers(2, 5), st.integers(2, 5)),
       dtype=st.sampled_from([torch.float32, torch.float64]),
       seed=st.integers(0, 2**16))
def test_trace_changes_no_value_gradient_or_random_state(chain, shape, dtype, seed):
    plain = _run(chain, shape, dtype, seed, traced=False)
    traced = _run(chain, shape, dtype, seed, traced=True)
    for what, a, b in zip(("output", "gradient", "random state"), plain, traced):
        assert a.shape == b.shape and torch.equal(a, b), f"{what} differs after {chain}"


@settings(max_examples=20, deadline=None)
@given(chain=st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=8),
       seed=st.integers(0, 2**16))
def test_trace_leaves_the_inputs_values_alone(chain, seed):
    """The trace records; it never writes into the user's tensors (the input after the chain is
    the same with and without it)."""
    inputs = []
    for traced in (False, True):
        torch.manual_seed(seed)
        x = torch.randn(4, 3, requires_grad=True)
        with shapetrace.trace() if traced else _Nothing():
            h = x * 1.0
            for name in chain:
                h = OPS[name](h, x)
        inputs.append(x.detach().clone())
    assert torch.equal(*inputs)

