"""A recurrent encoder handed its inputs time-first, as its docstring says in words apart
(``(src seq len, batch size, embed size)``), and its initial state by the caller (``hidden``,
which its name guesses a sequence): the state is read at the shape the recurrent layer asks for,
(layers * directions, B, C), and the encoder is checked, with a note."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.base.dims import Dims
from shapetrace.drive.docshapes import documented_input


class BiEncoder(nn.Module):
    def __init__(self, embed_size, hidden_size):
        super().__init__()
        self.gru = nn.GRU(embed_size, hidden_size, bidirectional=True)
        self.out = nn.Linear(2 * hidden_size, hidden_size)

    def forward(self, embedded, hidden):
        """
        :param embedded: (src seq len, batch size, embed size)
        :param hidden: the initial state
        """
        output, hidden = self.gru(embedded, hidden)
        return torch.tanh(self.out(output)), hidden


def test_words_apart_in_a_docstring_make_one_name():
    spec = documented_input("embedded", BiEncoder.forward, BiEncoder, Dims())
    assert spec is not None and tuple(spec.dims) == ("S", "B", "C"), spec


def test_the_state_is_read_at_the_shape_the_layer_asks_for():
    result = st.check(BiEncoder).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("hidden read as a recurrent layer's state, (2, B, C)") for n in result.notes), \
        result.notes
