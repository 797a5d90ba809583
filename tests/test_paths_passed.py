"""Modules the project builds and feeds one way, checked with nothing declared.

- An encoder whose default front end (``front="conv"``) its callers never use: the project's
  call that gives its required width passes ``front=None`` beside it, and the module is built on
  that path (its default front end takes a mask this encoder never hands it).
- A decoder layer whose self-attention is told the mask is causal by default while the mask is
  a forward argument left None: torch refuses the hint without the mask (``Need attn_mask``),
  a value its callers pass, so a target error asking for it, not an op-failed finding.

The package below is ours.
"""

from __future__ import annotations

import textwrap

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LAYERS = '''
import math

import torch
import torch.nn as nn


class MaskedFront(nn.Module):
    """A front end that halves the features and needs the frames' mask beside them."""

    def __init__(self, in_width, width):
        super().__init__()
        self.proj = nn.Linear((in_width - 1) // 2, width)

    def forward(self, x, x_mask):
        return self.proj(x[..., 1::2]) * x_mask


class Stack(nn.Module):
    def __init__(self, in_width, width, heads=4, front="conv"):
        super().__init__()
        if front == "conv":
            self.front = MaskedFront(in_width, width)
        elif front is None:
            self.front = nn.Identity()
        else:
            raise ValueError(front)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = nn.LayerNorm(width)

    def forward(self, xs):
        xs = self.front(xs)
        return self.norm(xs + self.attn(xs, xs, xs, need_weights=False)[0])


class HintedDecoderLayer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = nn.LayerNorm(width)

    def forward(self, tgt, tgt_mask=None, tgt_is_causal=True):
        out, _ = self.attn(tgt, tgt, tgt, attn_mask=tgt_mask, is_causal=tgt_is_causal,
                           need_weights=False)
        return self.norm(tgt + out)
'''

MODEL = '''
import torch.nn as nn

from .layers import Stack


class Speech(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.decoder = Stack(in_width=32, width=hp.width, front=None)

    def forward(self, xs):
        return self.decoder(xs)
'''


@pytest.fixture
def package(tmp_path):
    root = tmp_path / "speech"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "layers.py").write_text(textwrap.dedent(LAYERS))
    (root / "model.py").write_text(textwrap.dedent(MODEL))
    return root


def _target(report: dict, name: str) -> dict:
    return next(t for t in report["targets"] if t["target"].endswith("::" + name))


def test_a_path_the_same_call_chooses_is_taken_with_the_width_it_gives(capsys, package):
    code, report = cli_json(capsys, str(package / "layers.py::Stack"))
    target = _target(report, "Stack")
    assert target["error"] is None
    assert [d for d in target["diagnostics"] if d["severity"] == "error"] == []
    notes = " ".join(target["notes"])
    assert "in_width=32 as model.py:10 passes it" in notes
    assert "front=None as the same call passes" in notes


def test_a_hint_refused_for_a_mask_left_none_asks_for_the_mask(capsys, package):
    code, report = cli_json(capsys, str(package / "layers.py::HintedDecoderLayer"))
    target = _target(report, "HintedDecoderLayer")
    assert target["diagnostics"] == [] or all(d["rule"] != "op-failed" for d in target["diagnostics"])
    assert target["error"] is not None
    assert "Need attn_mask" in target["error"] and "tgt_mask" in target["error"]
    assert "left None: a value its callers pass" in target["error"]
