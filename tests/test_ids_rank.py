"""Token ids read from a failed embedding are (B, T); code that lifts a table by an axis to
meet ids with an axis more (the notes of each step of a piano roll: (B, T, K)) fails beside the
guess, not by a bug of its own: never op-failed. The ids are read again with several per
position (``rank_reads.StackedIds``), and the module is checked so."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class Tracks(nn.Module):
    """Embeds K tracks per step and adds each step's position to every track."""

    def __init__(self, vocab_size, d_model, max_seq_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.register_buffer("pe", torch.randn(1, max_seq_len, d_model))

    def forward(self, src):
        x = self.embed(src)  # (B, T, K, C)
        pe = self.pe[:, :src.size(1)].repeat(src.size(0), 1, 1).unsqueeze(-2)
        return x + pe


def test_ids_with_an_axis_more_than_guessed_are_the_guess_not_a_bug():
    result = st.check(Tracks).targets[0]
    assert not [d for d in result.diagnostics if d.rule == "op-failed"], result.diagnostics
    assert result.error is None, result.error
    assert any(n.startswith("src (B, T, N) read as several token ids per position") for n in result.notes), \
        result.notes


def test_given_ids_with_their_tracks_run_clean():
    result = st.check(Tracks, inputs=["src=B,T,3:long:V"]).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
