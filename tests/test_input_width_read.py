"""An input narrower than the model (a source of keys of ``d_k`` features beside queries of
``d_model``) is guessed with the model's width, and the forward fails where a weight of the
narrower width meets it: that input is read with the weight's width, and the module checked.
A layer of the wrong width on the model's own stream stays the user's bug: no reading runs."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class Norm(nn.Module):
    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(features))
        self.eps = eps

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return self.gain * centred / (centred.pow(2).mean(-1, keepdim=True) + self.eps).sqrt()


class NarrowSourceCross(nn.Module):
    def __init__(self, d_model, heads, d_k):
        super().__init__()
        self.norm_src = Norm(d_k)
        self.norm_tgt = Norm(d_model)
        self.attn = nn.MultiheadAttention(d_model, heads, kdim=d_k, vdim=d_k, batch_first=True)

    def forward(self, tgt, src):
        src = self.norm_src(src)
        return tgt + self.attn(self.norm_tgt(tgt), src, src, need_weights=False)[0]


class WrongNormWidth(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.norm = Norm(d_model // heads)  # the head size, not the width
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(self.norm(x))


def test_a_narrow_source_is_read_with_its_weight_s_width():
    result = st.check(NarrowSourceCross, init={"d_model": "C", "heads": "H", "d_k": "d"}).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("src read with d features" in n for n in result.notes), result.notes


def test_a_wrong_width_on_the_stream_itself_stays_a_finding():
    result = st.check(WrongNormWidth, init={"d_model": "C", "heads": "H"}).targets[0]
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
