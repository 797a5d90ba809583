"""An input no name explains whose axes the einsum its code hands it to spells out
(``torch.einsum("bs,j->bsj", positions, self.inv_freq)``, a layer down): read as (B, T), the
sequence the queries' own when no other input has one; checked clean, and a bug behind it (heads
merged without moving them back beside the features) found. Letters for no size say nothing."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace.base.specs import InputSpec
from shapetrace.drive.einsum_reads import spec_by_einsum


class Rotation(nn.Module):
    def __init__(self, head_dim, base=10000):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim))

    def angles(self, positions):
        freqs = torch.einsum("bs,j->bsj", positions.float(), self.inv_freq)
        return freqs.cos().unsqueeze(2), freqs.sin().unsqueeze(2)

    def forward(self, x, positions):
        cos, sin = self.angles(positions)
        x1, x2 = x.chunk(2, dim=-1)
        y1, y2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        return torch.cat((y1, y2), dim=-1)


class PositionsAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.rotary = Rotation(self.head_dim)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, positions, hidden_states):
        b, t, c = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.heads, self.head_dim).unbind(2)
        q, k = self.rotary(q, positions), self.rotary(k, positions)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class HeadsMergedInPlace(PositionsAttention):
    def forward(self, positions, hidden_states):
        b, t, c = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.heads, self.head_dim).unbind(2)
        q, k = self.rotary(q, positions), self.rotary(k, positions)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        return self.out(y.reshape(b, t, c))


def unnamed(state, angles):
    return torch.einsum("xy,j->xyj", state, angles)


def test_the_einsums_letters_give_the_inputs_axes():
    specs = [InputSpec("hidden_states", ("B", "T", "C"))]
    assert spec_by_einsum("positions", PositionsAttention.forward, specs) == InputSpec("positions", ("B", "T"))
    assert spec_by_einsum("state", unnamed, specs) is None


def test_positions_read_from_the_einsum_are_checked_clean():
    result = st.check(PositionsAttention).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics


def test_a_bug_behind_them_is_found():
    result = st.check(HeadsMergedInPlace).targets[0]
    assert result.error is None, result.error
    assert "reshape-jumble" in {d.rule for d in result.diagnostics if d.severity == "error"}, \
        result.diagnostics


def test_a_rotation_alone_fed_a_guess_of_fewer_axes_is_no_finding():
    # x is one head's features per position in its callers, (B, T, H, d): the guess (B, T, d)
    # meets the table the code lifted for the heads axis, cut in halves first (chunk)
    result = st.check(Rotation).targets[0]
    assert not [d for d in result.diagnostics if d.rule == "op-failed"], result.diagnostics
