import torch

from gates.stack import Scale, ScaleStack


def test_scale_then_stack():
    x = torch.randn(2, 4, 3)
    assert Scale([1.0, 1.0, 1.0])(x).shape == x.shape
    stack = ScaleStack([Scale([0.5, 0.5, 0.5]), Scale([2.0, 1.0, 0.0])])
    assert stack(x).shape == x.shape
