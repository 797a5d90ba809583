"""Inputs no name explains, read from torch's attention layer forward hands them to: a sequence
handed as ``query`` is the queries' (B, T, C) with ``batch_first=True``, (T, B, C) without;
one handed as ``key``/``value`` beside other queries has a length of its own (S). A layer a
course template sets to None before its TODO builds it is read as built."""

from __future__ import annotations

import math

import torch.nn as nn

import shapetrace as st
from shapetrace.drive.infer import infer_inputs

DIMS = {"B": 5, "T": 7, "S": 17, "H": 11, "d": 13, "C": 143}


class DecoderStep(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.cross = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, dec_inp, enc_inp):
        x = self.norm(dec_inp + self.self_attn(dec_inp, dec_inp, dec_inp)[0])
        return x + self.cross(x, enc_inp, enc_inp)[0]


class TimeFirstStep(DecoderStep):
    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.self_attn = nn.MultiheadAttention(dim, heads)
        self.cross = nn.MultiheadAttention(dim, heads)


def _dims(cls):
    return {s.name: tuple(s.dims) for s in infer_inputs(cls, DIMS)}


def test_sequences_handed_to_torch_attention_take_its_layout():
    assert _dims(DecoderStep) == {"dec_inp": ("B", "T", "C"), "enc_inp": ("B", "S", "C")}
    assert _dims(TimeFirstStep) == {"dec_inp": ("T", "B", "C"), "enc_inp": ("S", "B", "C")}
    result = st.check(DecoderStep, init={"dim": "C", "heads": "H"}).targets[0]
    assert result.error is None, result.error
    assert [d for d in result.diagnostics if d.severity == "error"] == []


class HeadsOfOurs(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, query, key, value):
        s = self.q(query) @ self.k(key).transpose(-2, -1) / math.sqrt(query.shape[-1])
        return s.softmax(-1) @ self.v(value)


class TemplateBlock(nn.Module):
    """A course template: each layer set to None, then built where the TODO says."""

    def __init__(self, dim):
        super().__init__()
        self.attention_self = None
        self.attention_cross = None
        # TODO: build the layers
        self.attention_self = HeadsOfOurs(dim)
        self.attention_cross = HeadsOfOurs(dim)

    def forward(self, dec_inp, enc_inp):
        x = dec_inp + self.attention_self(dec_inp, dec_inp, dec_inp)
        return x + self.attention_cross(x, enc_inp, enc_inp)


def test_a_layer_set_to_none_before_it_is_built_is_read_as_built():
    assert _dims(TemplateBlock) == {"dec_inp": ("B", "T", "C"), "enc_inp": ("B", "S", "C")}
    result = st.check(TemplateBlock, init={"dim": "C"}).targets[0]
    assert result.error is None, result.error
