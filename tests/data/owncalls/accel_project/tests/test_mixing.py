import not_installed_test_helpers as helpers
import torch

from shifts.mixing import ShiftMix


def test_mix_keeps_the_shape():
    mix = ShiftMix(torch.tensor([1, 2]), 12)
    out = mix(torch.randn(3, 5, 12))
    assert helpers.same_shape(out, (3, 5, 12))
