import torch

from gates.layers import TableGate


def test_gate_keeps_the_shape():
    gate = TableGate(torch.zeros(10))
    out = gate(torch.randn(4, 7, 10))
    assert out.shape == (4, 7, 10)
