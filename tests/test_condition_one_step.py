"""A conditioning vector per sample laid out as a sequence of one, (B, 1, C), broadcast over the
positions of the data it modulates (``x * (1 + scale) + shift``, no ``unsqueeze``): guessed as
a timestep, as a value or a vector per sample, the forward fails; read so, it runs and is
checked."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st


def modulate(x, shift, scale):
    return x * (1.0 + scale) + shift


class AdaptiveNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.shift = nn.Sequential(nn.SiLU(), nn.Linear(num_features, num_features))
        self.scale = nn.Sequential(nn.SiLU(), nn.Linear(num_features, num_features))
        self.norm = nn.LayerNorm(num_features, elementwise_affine=False)

    def forward(self, x, t):
        return modulate(self.norm(x), self.shift(t), self.scale(t))


def test_a_condition_broadcast_over_the_positions_is_read_as_a_sequence_of_one():
    result = st.check(AdaptiveNorm, init={"num_features": "C"}).targets[0]
    assert result.error is None, result.error
    assert any("(B, 1, C)" in n for n in result.notes), result.notes
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
