"""A trace switches off PyTorch's fused fast path of nn.TransformerEncoderLayer and
nn.MultiheadAttention (in eval mode, without gradients): the report says so in one note, only
when torch would have taken that path."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import shapetrace as st
from shapetrace.record.fastpath import FastPathWatch

EVEN_HEADS = {"H": 2, "d": 8}


class Encoder(nn.Module):
    def __init__(self, d_model, nhead, batch_first=True):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, 2 * d_model, dropout=0.0,
                                           batch_first=batch_first)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class SequenceFirstEncoder(Encoder):
    def __init__(self, d_model, nhead):
        super().__init__(d_model, nhead, batch_first=False)


class SelfAttention(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class CrossAttention(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x, context):
        return self.attn(x, context, context, need_weights=False)[0]


class HookedEncoder(Encoder):
    """A forward hook of the user's own: torch takes the layers' standard path anyway, but that
    calls the attention, whose own fast path does not mind hooks."""

    def __init__(self, d_model, nhead):
        super().__init__(d_model, nhead)
        self.enc.layers[0].linear1.register_forward_hook(lambda m, a, out: None)
        self.enc.layers[1].linear1.register_forward_hook(lambda m, a, out: None)


def _notes(cls, dims, inputs=None):
    (result,) = st.check(cls, dims=dims, inputs=inputs, behaviour=False).targets
    assert result.error is None
    return [n for n in result.notes if "fast path" in n]


@pytest.mark.parametrize("cls, dims, inputs, names", [
    pytest.param(Encoder, EVEN_HEADS, None, "nn.TransformerEncoderLayer (enc.layers.0, enc.layers.1)",
                 id="encoder-even-heads"),
    pytest.param(SelfAttention, EVEN_HEADS, None, "nn.MultiheadAttention (attn)",
                 id="self-attention-even-heads"),
    pytest.param(HookedEncoder, EVEN_HEADS, None,
                 "nn.MultiheadAttention (enc.layers.0.self_attn, enc.layers.1.self_attn)",
                 id="users-hooks-leave-only-the-attention"),
])
def test_note_when_the_fast_path_would_run(cls, dims, inputs, names):
    (note,) = _notes(cls, dims, inputs)
    assert note.startswith(f"{names} ran the standard path, not PyTorch's fused fast path")
    assert "padded positions" in note


@pytest.mark.parametrize("cls, dims, inputs", [
    pytest.param(Encoder, {}, None, id="odd-heads"),  # H=11: torch's fast path needs even heads
    pytest.param(SequenceFirstEncoder, EVEN_HEADS, None, id="not-batch-first"),
    pytest.param(CrossAttention, EVEN_HEADS, ["x=B,T,C", "context=B,S,C"], id="cross-attention"),
])
def test_no_note_when_torch_would_take_the_standard_path(cls, dims, inputs):
    assert _notes(cls, dims, inputs) == []


def test_no_note_with_gradients():
    model = SelfAttention(16, 2).eval()
    x = torch.randn(2, 5, 16)
    with FastPathWatch(model) as watch, st.trace(model):
        model(x)
    assert watch.note is None
    with torch.no_grad(), FastPathWatch(model) as watch, st.trace(model):
        model(x)
    assert watch.note is not None


def test_the_note_tells_the_truth():
    """Where the note is given, a padded encoder's outputs under the trace differ from the
    untraced run's; where it is not, they are bit-identical."""
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16)
    pad = torch.zeros(3, 5, dtype=torch.bool)
    pad[0, 3:] = True
    found = {}
    for batch_first in (True, False):
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=batch_first)
        model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=batch_first).eval()
        src = x if batch_first else x.transpose(0, 1)
        with torch.no_grad():
            plain = model(src, src_key_padding_mask=pad)
            with FastPathWatch(model) as watch, st.trace(model):
                traced = model(src, src_key_padding_mask=pad)
        found[batch_first] = (watch.note is not None, not torch.equal(plain, traced))
    assert found == {True: (True, True), False: (False, False)}
