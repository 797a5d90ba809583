"""base.ops.ADDS holds every spelling of an addition the tracer records, the one set the rules
and behaviour checks read additions by (residuals, position tables, rotations, biases)."""

from __future__ import annotations

import torch

import shapetrace as st
from shapetrace.base.ops import ADDS


def test_every_way_of_writing_an_addition_is_recorded_as_one_of_adds():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    with st.trace() as t:
        c = a + b
        c = a.add(b)
        c = torch.add(a, b)
        c.add_(b)
        c += b
        c = 1.0 + a
    ops = [rec.op for rec in t.records]
    assert len(ops) == 6 and all(op in ADDS for op in ops), ops
    assert not {"-", "*", "Tensor.mul", "torch.sub"} & ADDS
