"""Guesses that do not fit code for tabular feature fields: a forward that walks its input item
by item (a list of per-field embeddings) handed one tensor, and a count of fields read as the
width from the linear layer the constructor hands it to. Neither is the code's fault: the first
is a target error that says the input is a container; the second is read again as the size it
met, and the module is checked."""

from __future__ import annotations

import itertools

import torch
import torch.nn as nn

import shapetrace as st


class PairProducts(nn.Module):
    """Inner products of every pair of per-field embeddings (a list of (B, 1, E))."""

    def forward(self, embeddings):
        rows, cols = zip(*itertools.combinations(range(len(embeddings)), 2))
        left = torch.cat([embeddings[r] for r in rows], dim=1)
        right = torch.cat([embeddings[c] for c in cols], dim=1)
        return torch.sum(left * right, dim=2, keepdim=True)


class FieldWalk(nn.Module):
    """Each field's embedding projected, then concatenated (a list of (B, E))."""

    def __init__(self, embed_dim):
        super().__init__()
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, embeddings):
        outs = [self.proj(e) for e in embeddings]
        return torch.stack(outs, dim=1).sum(dim=(1, 2))


class FieldGate(nn.Module):
    """Squeeze-and-excitation over a sample's feature fields (B, F, E)."""

    def __init__(self, field_size, reduction=3):
        super().__init__()
        hidden = max(1, field_size // reduction)
        self.excite = nn.Sequential(nn.Linear(field_size, hidden, bias=False), nn.ReLU(),
                                    nn.Linear(hidden, field_size, bias=False), nn.Sigmoid())

    def forward(self, inputs):
        squeezed = torch.mean(inputs, dim=-1)
        return inputs * self.excite(squeezed).unsqueeze(2)


class WidthGate(nn.Module):
    """The same gate over the width: its size is the width, and the linear layer says so."""

    def __init__(self, hidden_size):
        super().__init__()
        self.gate = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        return x * torch.sigmoid(self.gate(x))


def test_pairs_of_a_walked_input_are_a_target_error_saying_it_is_a_container():
    result = st.check(PairProducts).targets[0]
    assert result.error is not None
    assert "taken item by item" in result.error and "container of tensors" in result.error
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]


def test_a_walked_input_whose_items_fit_is_still_checked():
    result = st.check(FieldWalk, init={"embed_dim": "C"}).targets[0]
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []


def test_a_field_count_read_as_the_width_is_read_again_as_the_size_it_met():
    result = st.check(FieldGate).targets[0]
    assert result.error is None, result.error
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []
    assert any("field_size=7, the size of T it met at F.linear" in n for n in result.notes)


def test_a_width_read_from_its_layer_stays_the_width():
    result = st.check(WidthGate).targets[0]
    assert result.error is None
    assert not any("it met at" in n for n in result.notes)
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []
