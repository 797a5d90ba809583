"""Lengths a module fixes itself: a position table of ``n_token`` rows (a name that is a
vocabulary in some code and a number of positions in other) read as the sequence length when
the vocabulary reading does not fit, and a table built at a size written in the code giving the
sequence its length; a table of the maximum length added uncut stays a finding."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.base.dims import Dims


class TokenTable(nn.Module):
    def __init__(self, n_vocab, n_embd, n_token):
        super().__init__()
        self.tokens = nn.Embedding(n_vocab, n_embd)
        self.positions = nn.Parameter(torch.randn(n_token, n_embd) * 0.02)

    def forward(self, tokens):
        x = self.tokens(tokens)
        x += self.positions
        return x


class FixedText(nn.Module):
    """A text encoder built at sizes written in its own code."""

    def __init__(self):
        super().__init__()
        self.embed = TokenTable(50, 24, 12)
        self.norm = nn.LayerNorm(24)

    def forward(self, tokens):
        return self.norm(self.embed(tokens))


class Uncut(nn.Module):
    """BUG: the position table of max_len rows is added whole, not cut to the sequence."""

    def __init__(self, vocab_size, dim, max_len):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, idx):
        return self.tokens(idx) + self.positions


def test_n_token_is_read_as_the_sequence_length_when_a_vocabulary_does_not_fit():
    result = st.check(TokenTable).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("n_token read as the sequence length (T)") for n in result.notes)


def test_a_table_at_a_size_of_the_code_gives_the_sequence_its_length():
    result = st.check(FixedText).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert result.dims["T"] == 12
    assert any(n.startswith("T=12, the length of a table") for n in result.notes)


def test_a_table_of_the_maximum_length_added_uncut_is_found_at_a_length_the_user_gives():
    """With the sequence length given, a table of the maximum length added whole fails there:
    a finding. With nothing given, the length was shapetrace's choice: the module runs at the
    table's length (a fixed-length model, as recommenders pad their inputs), with a note."""
    given = st.check(Uncut, dims={"T": 7}).targets[0]
    assert "op-failed" in {d.rule for d in given.diagnostics if d.severity == "error"}, \
        (given.error, given.notes)
    chosen = st.check(Uncut).targets[0]
    assert chosen.error is None and chosen.ok, (chosen.error, chosen.diagnostics)
    assert any("the length of the table built for the maximum length" in n for n in chosen.notes)


class FourierFilter(nn.Module):
    """A learned filter over the frequencies of a sequence of the maximum length: the input's
    length must be max_len (the filter has max_len // 2 + 1 rows, the input's rfft T // 2 + 1)."""

    def __init__(self, hidden_size, max_seq_length):
        super().__init__()
        self.filter = nn.Parameter(torch.randn(max_seq_length // 2 + 1, hidden_size, 2) * 0.02)
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, hidden):
        spectrum = torch.fft.rfft(hidden, dim=1, norm="ortho")
        spectrum = spectrum * torch.view_as_complex(self.filter)
        mixed = torch.fft.irfft(spectrum, n=hidden.shape[1], dim=1, norm="ortho")
        return self.norm(mixed + hidden)


def test_sizes_made_from_the_length_and_the_maximum_length_give_the_sequence_its_length():
    """Neither size that met is a probe size: what the input's length and the filter's maximum
    length each became. Run at the maximum length, the module runs; a length the user gives
    that does not fit stays a finding."""
    chosen = st.check(FourierFilter).targets[0]
    assert chosen.error is None and chosen.ok, (chosen.error, chosen.diagnostics)
    assert chosen.dims["T"] == Dims()["L"] != Dims()["T"]  # the probes' maximum length
    assert any("the maximum length, which the module's tables are built for" in n
               for n in chosen.notes), chosen.notes
    given = st.check(FourierFilter, dims={"T": 7}).targets[0]
    assert "op-failed" in {d.rule for d in given.diagnostics if d.severity == "error"}


class InvertedTokens(nn.Module):
    """Each variate's whole series made one token: a layer over the time axis, built for the
    series length (time-series models that invert the axes)."""

    def __init__(self, seq_len, d_model, n_heads):
        super().__init__()
        self.embed = nn.Linear(seq_len, d_model)
        self.mix = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        tokens = self.embed(x.permute(0, 2, 1))  # (B, N, d_model)
        return self.mix(tokens, tokens, tokens, need_weights=False)[0]


def test_a_layer_over_the_time_axis_gives_the_series_its_length():
    chosen = st.check(InvertedTokens).targets[0]
    assert chosen.error is None and chosen.ok, (chosen.error, chosen.diagnostics)
    assert chosen.dims["T"] == Dims()["L"]
    assert any("the length its layers over the time axis are built for" in n
               for n in chosen.notes), chosen.notes


class FoldedVolume(nn.Module):
    """Tokens folded back into a volume 32 deep with a square face: the length must hold it."""

    def __init__(self, dim, dim_out):
        super().__init__()
        self.conv = nn.Conv3d(dim, dim_out, 3, 2, 1)
        self.norm = nn.LayerNorm(dim_out)

    def forward(self, x):
        B, tokens, C = x.shape
        D = 32
        H = W = int((tokens // D) ** 0.5)
        x = self.conv(x.transpose(-2, -1).contiguous().view(B, C, D, H, W))
        return self.norm(x.flatten(2).transpose(1, 2))


def test_sides_worked_out_as_zero_ask_for_a_length_the_grid_can_hold():
    """At the probe length the square's sides come out 0 and the view fails: shapetrace's
    length was too short, not the module wrong. A length the user gives stays a finding."""
    chosen = st.check(FoldedVolume).targets[0]
    assert chosen.error is None and chosen.ok, (chosen.error, chosen.diagnostics)
    assert chosen.dims["T"] == 32 * 16
    assert any("a length the grid the forward folds it into can hold" in n for n in chosen.notes)
    given = st.check(FoldedVolume, dims={"T": 7}).targets[0]
    assert "op-failed" in {d.rule for d in given.diagnostics if d.severity == "error"}
