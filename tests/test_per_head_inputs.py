"""A module sized by a head size alone (rotary tables built for ``d_k`` features, no argument a
model width) takes vectors of d_k features: its guessed vectors get d features, with a note,
and it is checked; a module given a width keeps its inputs at the width."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class PairRotation(nn.Module):
    """Rotates neighbouring pairs of features by angles per position."""

    def __init__(self, theta: float, d_k: int, max_seq_len: int):
        super().__init__()
        freqs = 1.0 / theta ** (torch.arange(0, d_k, 2).float() / d_k)
        angles = torch.outer(torch.arange(max_seq_len).float(), freqs)
        self.register_buffer("cos", angles.cos().repeat_interleave(2, dim=-1))
        self.register_buffer("sin", angles.sin().repeat_interleave(2, dim=-1))

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor) -> torch.Tensor:
        turned = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
        return x * self.cos[token_positions] + turned * self.sin[token_positions]


class WidthAndHead(nn.Module):
    def __init__(self, d_model: int, d_k: int):
        super().__init__()
        self.down = nn.Linear(d_model, d_k)

    def forward(self, x):
        return self.down(x)


def test_vectors_of_a_module_sized_by_a_head_size_have_that_many_features():
    result = st.check(PairRotation).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("x read with d features") for n in result.notes), result.notes
    widths = {m.shape[-1] for r in result.trace.records for m in r.inputs
              if m.src is None and m.dtype == torch.float32 and len(m.shape) == 3}
    assert widths == {result.dims["d"]}, (widths, result.dims)


def test_a_module_given_a_width_keeps_its_inputs_at_the_width():
    result = st.check(WidthAndHead).targets[0]
    assert result.error is None, result.error
    assert not any("read with d features" in n for n in result.notes), result.notes
