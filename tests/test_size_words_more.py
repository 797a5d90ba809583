"""Size names that several public codebases use for the same things: ``d_emb`` the width
(Transformer-XL's ``d_embed`` beside it), ``d_inner`` and ``d_inner_hid`` the feed-forward
width, ``num_head`` and ``head_num`` the head count. A layer written with them is built and
checked with nothing declared."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st
from shapetrace.base.names import FFN, size_of


class EncoderLayer(nn.Module):
    def __init__(self, d_emb, head_num, d_inner, dropout=0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_emb, head_num, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_emb, d_inner), nn.ReLU(), nn.Linear(d_inner, d_emb))
        self.n1, self.n2 = nn.LayerNorm(d_emb), nn.LayerNorm(d_emb)

    def forward(self, x):
        x = self.n1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.n2(x + self.ff(x))


def test_the_words_name_their_sizes():
    assert size_of("d_emb", constructor=True) == "C"
    assert size_of("num_head") == size_of("head_num") == "H"
    assert {"d_inner", "d_inner_hid"} <= FFN


def test_a_layer_written_with_them_is_checked_with_nothing_declared():
    result = st.check(EncoderLayer).targets[0]
    assert result.error is None, result.error
    assert result.dims["H"] == 11 and result.dims["C"] == 143
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []
