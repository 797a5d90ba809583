"""A decoder layer over nn.MultiheadAttention's default layout (time first) whose keys and values
are made from the encoder's memory (``k = self.with_pos(memory, pos)``) and whose padding mask
for them is handed on as ``key_padding_mask=``: the mask has one flag per key of the memory,
(B, S), not per query; with the inputs taken time-first, the layer is checked and clean."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st
from shapetrace.drive.asks import mask_axes


class MemoryDecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads)
        self.cross_attn = nn.MultiheadAttention(d_model, n_heads)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    @staticmethod
    def with_pos(x, pos=None):
        return x if pos is None else x + pos

    def forward(self, tgt, memory, memory_key_padding_mask=None, pos=None):
        tgt = self.norm1(tgt + self.self_attn(tgt, tgt, value=tgt)[0])
        k = self.with_pos(memory, pos)
        attended = self.cross_attn(tgt, k, value=memory, key_padding_mask=memory_key_padding_mask)[0]
        return self.norm2(tgt + attended)


class QueryPaddingLayer(MemoryDecoderLayer):
    def forward(self, tgt, tgt_key_padding_mask=None):
        return self.norm1(tgt + self.self_attn(tgt, tgt, tgt, key_padding_mask=tgt_key_padding_mask)[0])


def test_a_padding_mask_for_keys_of_the_memory_has_their_length():
    assert mask_axes(MemoryDecoderLayer.forward, "memory_key_padding_mask") == ("B", "S")
    assert mask_axes(QueryPaddingLayer.forward, "tgt_key_padding_mask") == ("B", "T")


def test_the_layer_is_checked_time_first_and_clean():
    result = st.check(MemoryDecoderLayer).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("inputs taken time-first") for n in result.notes), result.notes
