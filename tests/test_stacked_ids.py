"""Token ids of more than one per position: the notes sounding at each step of a piano roll, the
codebooks of an audio frame. A module that embeds them and lifts its table of positions by an
axis to meet them (``pe.unsqueeze(-2)``) fails on one id per position; read with several, it
runs and is checked, with a note. A module made for one id per position whose table does not
fit for a reason of its own is not read so."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

import shapetrace as st


class ChordEncoder(nn.Module):
    """Each step holds several notes: ids (B, T, N) embedded, positions added per step, the notes
    of all steps attended over together, one vector per note out."""

    def __init__(self, vocab_size, d_model, n_heads, max_len=64):
        super().__init__()
        self.heads = n_heads
        self.embed = nn.Embedding(vocab_size, d_model)
        pe = torch.randn(max_len, d_model) / math.sqrt(d_model)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, notes):
        x = self.embed(notes)  # (B, T, N, C)
        x = x + self.pe[:, :x.size(1)].unsqueeze(-2)
        b, t, n, c = x.shape
        x = x.reshape(b, t * n, c)
        q, k, v = (y.view(b, t * n, self.heads, c // self.heads).transpose(1, 2)
                   for y in self.qkv(x).chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c // self.heads), dim=-1)
        y = (w @ v).transpose(1, 2).reshape(b, t * n, c)
        return self.out(y)


class MaxLengthHeads(nn.Module):
    """One id per position, heads split with the maximum length where the input's length
    belongs: ids of another rank fail there too, and are not read (the length is read as the
    one the view asks for instead)."""

    def __init__(self, vocab_size, d_model, n_heads, max_len=64):
        super().__init__()
        self.heads, self.max_len = n_heads, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, tokens):
        x = self.embed(tokens)
        b, c = x.size(0), x.size(-1)
        q, k, v = (y.view(b, self.max_len, self.heads, c // self.heads).transpose(1, 2)
                   for y in self.qkv(x).chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c // self.heads), dim=-1)
        return (w @ v).transpose(1, 2).reshape(b, -1, c)


def test_ids_of_several_per_position_are_read_and_checked():
    result = st.check(ChordEncoder).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("notes (B, T, N) read as several token ids per position")
               for n in result.notes), result.notes


def test_a_bug_of_its_own_is_not_read_away_as_ids_of_another_rank():
    result = st.check(MaxLengthHeads).targets[0]
    assert not any("several token ids per position" in n for n in result.notes), result.notes
