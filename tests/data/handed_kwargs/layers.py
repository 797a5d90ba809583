"""A layer wrapped by a module that hands its keyword arguments on (``**kwargs``): the inner
layer needs a padding mask its callers always pass, and reads it without a test for None."""

import torch.nn as nn


class MaskedFeedForward(nn.Module):
    """Zeroes the padded frames after a feed-forward (True marks padding)."""

    def __init__(self, width):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width))

    def forward(self, x, pad_mask=None):
        y = x + self.ff(x)
        return y * (1 - pad_mask.float())[..., None]


class Wrapped(nn.Module):
    """Hands whatever keywords it is given on to the layer inside."""

    def __init__(self, width):
        super().__init__()
        self.op = MaskedFeedForward(width)

    def forward(self, x, **kwargs):
        return self.op(x, **kwargs)
