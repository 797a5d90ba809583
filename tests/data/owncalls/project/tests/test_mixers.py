import unittest

import torch

from gates.mixers import ScaledHeads


class ScaledHeadsTest(unittest.TestCase):
    def setUp(self):
        self.mixer = ScaledHeads(12, [1.0, 0.5, 0.25])

    def test_shape(self):
        self.assertEqual(self.mixer(torch.randn(2, 5, 12)).shape, (2, 5, 12))
