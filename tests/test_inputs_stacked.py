"""Inputs that are a stack of sequences per sample (the rows of an alignment, the frames of a
clip), (B, N, T, C): guessed as one sequence (B, T, C) the forward fails on sizes shapetrace
chose, so they are read with one more axis before the positions, and the module is checked so
(never an op-failed finding from the guess). A reading that runs but loses the new axis does not
stand, and a real failure of a one-sequence module stays a finding."""

from __future__ import annotations

import math

import torch.nn as nn

import shapetrace as st


class TiedRowsAttention(nn.Module):
    """Attention along the positions of each row of a stack, weights tied over the rows."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.to_qkv = nn.Linear(d_model, 3 * d_model)
        self.to_out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, N, L = x.shape[:3]
        q, k, v = (t.view(B, N, L, self.heads, self.d_k).permute(0, 3, 1, 2, 4)
                   for t in self.to_qkv(x).chunk(3, dim=-1))
        scores = (q * (self.d_k * N) ** -0.5) @ k.transpose(-2, -1)
        scores = scores.sum(2, keepdim=True)  # tied over the rows
        out = scores.softmax(-1) @ v
        return self.to_out(out.permute(0, 2, 3, 1, 4).reshape(B, N, L, -1))


class RowsFolded(nn.Module):
    """Each row of the stack attended on its own: the rows folded into the batch."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, src):
        B, N, L = src.shape[:3]
        h = self.norm(src).reshape(B * N, L, -1)
        h = self.attn(h, h, h, need_weights=False)[0]
        return src + h.reshape(B, N, L, -1)


class UntransposedKeys(nn.Module):
    """One sequence per sample, keys not transposed: a real failure."""

    def __init__(self, d_model):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return (q @ k / math.sqrt(q.shape[-1])).softmax(-1) @ v


def test_a_stack_of_sequences_is_read_with_its_own_axis_and_checked():
    for cls in (TiedRowsAttention, RowsFolded):
        result = st.check(cls, init={"d_model": "C", "heads": "H"}).targets[0]
        assert result.error is None, result.error
        assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
        assert any("a stack of sequences per sample" in n for n in result.notes), result.notes
        assert "N" in result.dims


def test_a_one_sequence_module_that_fails_still_reports_its_failure():
    result = st.check(UntransposedKeys, init={"d_model": "C"}).targets[0]
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
