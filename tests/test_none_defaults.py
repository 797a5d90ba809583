"""Constructor arguments left at a default of None that the constructor reads as a size
(``nn.Linear(cond_dim, ...)``, ``c + c_skip``): the module is built again with the size its name
or its use says, with a note; a None the constructor tests, a None the caller gave and a
failure that is not about a None stay as they were."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st


class Project(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, e):
        return self.fc(e)


class Conditioned(nn.Module):
    """The None reaches a layer the constructor builds (its line, not the layer's, reads it)."""

    def __init__(self, dim, cond_dim=None, dropout=0.0):
        super().__init__()
        self.cond = Project(cond_dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.proj(F.gelu(x))


class Widened(nn.Module):
    def __init__(self, c, c_skip=None):
        super().__init__()
        self.mix = nn.Linear(c + c_skip, c)
        self.norm = nn.LayerNorm(c)

    def forward(self, x, skip):
        return self.norm(self.mix(torch.cat([x, skip], dim=-1)))


class Optional(nn.Module):
    """A None the constructor tests: the part is left out, and stays out."""

    def __init__(self, dim, cond_dim=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.cond = nn.Linear(cond_dim, dim) if cond_dim is not None else None

    def forward(self, x):
        return self.proj(x)


class Refusing(nn.Module):
    """Raises a TypeError that no None of its arguments caused."""

    def __init__(self, dim, scale=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        len(dim)

    def forward(self, x):
        return self.proj(x)


def test_a_none_a_layer_is_built_with_is_set_to_a_size():
    result = st.check(Conditioned).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    c = result.dims["C"]
    note = next(n for n in result.notes if n.startswith("cond_dim="))
    assert note.startswith(f"cond_dim={c}: left at its default None the constructor raised "
                           "TypeError") and "--init cond_dim=VALUE" in note


def test_a_none_added_to_a_size_is_set_and_the_module_is_checked():
    result = st.check(Widened).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("c_skip=") and "TypeError" in n for n in result.notes)
    assert any(r.op == "torch.cat" for r in result.trace.records)


def test_a_none_the_constructor_tests_stays_none():
    result = st.check(Optional).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert not any(n.startswith("cond_dim=") for n in result.notes)
    assert not any("linear" in r.op and r.inputs and r.inputs[0].shape[-1] != result.dims["C"]
                   for r in result.trace.records)


def test_other_failures_and_given_nones_stand():
    refused = st.check(Refusing).targets[0]
    assert refused.error is not None and "Refusing(" in refused.error \
        and "TypeError" in refused.error and not any(n.startswith("scale=") for n in refused.notes)
    given = st.check(Conditioned, init={"dim": 16, "cond_dim": None}).targets[0]
    assert given.error is not None and "cond_dim=None" in given.error
