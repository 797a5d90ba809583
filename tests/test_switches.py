"""Constructor switches nothing sets (``use_conv``, ``with_conv``, an argument annotated
``bool``): set on, so that the part they turn on is checked, with a note; a causal flag is not
such a switch (it says what the module is meant to be)."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace.base.names import is_switch


class Upsample(nn.Module):
    """Doubles an image's side, with a convolution after it when asked."""

    def __init__(self, channels, use_conv):
        super().__init__()
        self.use_conv = use_conv
        if use_conv:
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        return self.conv(x) if self.use_conv else x


class Gated(nn.Module):
    def __init__(self, d_model, gate: bool):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.gate = nn.Linear(d_model, d_model) if gate else None

    def forward(self, x):
        y = self.proj(x)
        return y * self.gate(x).sigmoid() if self.gate is not None else y


class MaybeCausal(nn.Module):
    def __init__(self, d_model, is_causal):
        super().__init__()
        self.is_causal = is_causal
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(x)


def test_names_that_read_as_switches():
    assert is_switch("use_conv") and is_switch("with_conv") and is_switch("has_bias")
    assert not is_switch("is_causal") and not is_switch("user_id") and not is_switch("conv")


def test_a_switch_nothing_sets_is_on_and_its_part_is_checked():
    result = st.check(Upsample).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("use_conv set True, a switch nothing sets") for n in result.notes)
    assert any("conv2d" in r.op for r in result.trace.records)  # the convolution ran


def test_an_argument_annotated_bool_is_a_switch():
    result = st.check(Gated).targets[0]
    assert result.error is None and result.ok
    assert any(n.startswith("gate set True") for n in result.notes)


def test_a_causal_flag_is_never_guessed_on():
    """A causal flag nothing sets is no switch turned on (that would say the module is meant to
    be causal): it is off, said in a note, and causal-leak is not judged."""
    result = st.check(MaybeCausal).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("is_causal=False, a causal flag nothing sets") for n in result.notes)
    assert not any(n.startswith("is_causal set True") for n in result.notes)
