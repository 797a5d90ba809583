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


class StackedGraphEncoder(nn.Module):
    """Counts of layers named for what they stack: one handed to torch's encoder (its
    ``num_layers``), one counted by a loop."""

    def __init__(self, feature_dim_size, ff_hidden_size, num_self_att_layers, num_gnn_layers):
        super().__init__()
        self.stacks = nn.ModuleList()
        for _ in range(num_gnn_layers):
            layer = nn.TransformerEncoderLayer(feature_dim_size, 1, ff_hidden_size,
                                               dropout=0.0, batch_first=True)
            self.stacks.append(nn.TransformerEncoder(layer, num_self_att_layers,
                                                     enable_nested_tensor=False))

    def forward(self, x):
        for stack in self.stacks:
            x = stack(x)
        return x


def test_counts_of_layers_named_for_what_they_stack_are_counts():
    from shapetrace.base.names import counts_layers

    assert counts_layers("num_self_att_layers") and counts_layers("n_enc_blocks") \
        and counts_layers("num_layer")
    assert not counts_layers("num_layer_norm") and not counts_layers("layers")
    result = st.check(StackedGraphEncoder).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
