"""Whole models checked with nothing declared (``python -m shapetrace FILE``, ``check(cls)``):
nanoGPT and a BERT-like encoder (tests/data/whole_models/), the Annotated Transformer's
encoder-decoder parts, a ViT, a file of buggy twins with a base class. Whole files exit 0 (or 2
where an argument cannot be guessed, never 1 on correct code); inputs are guessed from their
names (an ``attention_mask`` beside ``input_ids`` is a padding mask) and an ambiguous
constructor name (``num_tokens``: the sequence length or the vocabulary) is read both ways.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
from style_corpus import STYLES, load

import shapetrace as st

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODELS = STYLES.parent / "whole_models"


# --- the command line, nothing declared -----------------------------------------------------------

def _cli(capsys, *args: str) -> tuple[int, dict]:
    from shapetrace.frontends.cli import main

    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _loud(report: dict) -> list[str]:
    return [f"{t['target']}: {d['rule']} {d['message']}" for t in report["targets"]
            for d in t["diagnostics"] if d["severity"] in ("error", "warning")]


@pytest.mark.parametrize("name", ["nanogpt.py", "bert.py"])
def test_whole_file_exits_0(capsys, name):
    code, report = _cli(capsys, str(MODELS / name))
    assert [t["error"] for t in report["targets"]] == [None] * len(report["targets"])
    assert (code, _loud(report)) == (0, [])
    assert len(report["targets"]) >= 5


@pytest.mark.parametrize("name", ["Translator", "AttnSeq2Seq", "LayerNorm", "Generator",
                                  "MultiHeadedAttention"])
def test_annotated_transformer_parts_exit_0(capsys, name):
    """src/tgt are guessed as vectors, the embedding says they are token ids; the source is
    read whole by the decoder, which is not a causal leak."""
    code, report = _cli(capsys, f"{STYLES / 'seq2seq.py'}::{name}")
    assert report["targets"][0]["error"] is None
    assert (code, _loud(report)) == (0, [])


def test_a_guess_that_does_not_fit_is_read_as_an_image(capsys):
    """A ViT's ``x`` guessed as (B, T, C) fails at its Conv2d: it is read as an image, with a
    note, never reported as the student's bug; declared inputs are taken as given."""
    code, report = _cli(capsys, f"{STYLES / 'vision.py'}::VisionTransformer")
    target = report["targets"][0]
    assert (code, _loud(report)) == (0, [])
    assert any("read as an image" in note for note in target["notes"])
    code, report = _cli(capsys, f"{STYLES / 'vision.py'}::VisionTransformer",
                        "--input", "x=B,3,16,16", "--init", "embed_dim=C,num_heads=H")
    assert (code, _loud(report)) == (0, [])
    assert not any("read as an image" in note for note in report["targets"][0].get("notes", []))


def test_a_base_class_without_forward_is_not_a_target(capsys):
    code, report = _cli(capsys, str(STYLES / "around_attention.py"))
    names = [t["target"].rpartition("::")[2] for t in report["targets"]]
    assert "_Base" not in names and "MaskedRowsNanToNum" in names
    assert code == 1  # the buggy twins


def test_attention_mask_beside_input_ids_is_a_padding_mask():
    from shapetrace.base.dims import Dims
    from shapetrace.base.specs import make_input
    from shapetrace.drive.infer import infer_inputs

    cls = load(MODELS / "bert.py", "models").BertForSequenceClassification
    dims = Dims()
    specs = infer_inputs(cls, dims)
    assert [str(s) for s in specs] == ["input_ids=B,T:long", "attention_mask=B,T:long:2"]
    mask = make_input(specs[1], dims, generator=torch.Generator().manual_seed(0))
    assert mask.shape == (dims["B"], dims["T"]) and bool((mask[:, 0] == 1).all())
    assert bool((mask[:, 1:] <= mask[:, :-1]).all())  # real tokens first, then padding


# --- an ambiguous constructor name: num_tokens -------------------------------------------------

class _VocabGPTBadHead(nn.Module):
    """num_tokens is the vocabulary (Bloem's GPT); the head is applied to the wrong tensor."""

    def __init__(self, emb, num_tokens):
        super().__init__()
        self.tokens = nn.Embedding(num_tokens, emb)
        self.toprobs = nn.Linear(emb, num_tokens)

    def forward(self, idx):
        x = self.tokens(idx)
        return self.toprobs(x.transpose(1, 2))  # BUG: op-failed (the head reads (B, C, T))


def test_num_tokens_meant_as_the_sequence_length_is_read_so():
    module = load(STYLES / "head_reshapes.py", "models")
    (result,) = st.check(module.MixerTokenMixing).targets
    assert result.error is None and not [d for d in result.diagnostics if d.severity == "error"]
    assert any("num_tokens read as the sequence length" in n for n in result.notes)


def test_num_tokens_as_the_vocabulary_keeps_the_users_bug():
    """Run again with num_tokens as T, the module fails too: the first run's finding stands."""
    (result,) = st.check(_VocabGPTBadHead).targets
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
    assert not any("num_tokens read as" in n for n in result.notes)
