"""An input's shape read from the module's own check of it: a forward that unpacks a packed
(batch, 3 * heads * d, length) tensor and asserts its width is a multiple of ``3 * n_heads`` is
given that, with a note, and checked; a bug in it is found."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class PackedHeads(nn.Module):
    """Attention over queries, keys and values packed channels-first: (batch, 3*H*d, length)."""

    def __init__(self, n_heads):
        super().__init__()
        self.n_heads = n_heads

    def forward(self, qkv):
        batch, width, length = qkv.shape
        assert width % (3 * self.n_heads) == 0
        d = width // (3 * self.n_heads)
        q, k, v = qkv.reshape(batch * self.n_heads, 3 * d, length).split(d, dim=1)
        w = self.weights(torch.einsum("bct,bcs->bts", q, k) / d ** 0.5)
        return torch.einsum("bts,bcs->bct", w, v).reshape(batch, -1, length)

    def weights(self, scores):
        return torch.softmax(scores, dim=-1)


class QueriesNormalised(PackedHeads):
    """Normalises over the queries: each key's weights sum to one, not each query's."""

    def weights(self, scores):
        return torch.softmax(scores, dim=1)


def test_a_packed_input_is_read_from_the_modules_own_check():
    result = st.check(PackedHeads).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("qkv read as (B, 3*C, T) from the module's own check") for n in result.notes), \
        result.notes


def test_a_bug_behind_that_check_is_found():
    result = st.check(QueriesNormalised).targets[0]
    assert result.error is None, result.error
    axis = [d for d in result.diagnostics if d.rule == "softmax-axis"]
    assert axis and axis[0].line == QueriesNormalised.weights.__code__.co_firstlineno + 1, result.diagnostics
