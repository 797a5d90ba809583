"""An input no name explains, read by the first layer of the module it is handed to (token ids
into an encoder's embedding). A forward argument annotated to take a plain number beside a
tensor is given the number 1; a
causal mask the module builds for a length of its own (``nn.MultiheadAttention`` refusing the
guessed length: ``attn_mask is torch.Size([8, 8]), but should be (7, 7)``) sets the length the
module is checked at. The module is ours: a denoiser over a horizon of action steps.
"""

from __future__ import annotations

import inspect
import textwrap
import typing
from typing import Optional, Union

import pytest
import torch

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SOURCE = '''
import math
from typing import Union

import torch
import torch.nn as nn


class StepDenoiser(nn.Module):
    def __init__(self, input_dim: int, horizon: int, n_head: int = 4, n_emb: int = 64):
        super().__init__()
        self.input_emb = nn.Linear(input_dim, n_emb)
        self.time_emb = nn.Linear(1, n_emb)
        self.attn = nn.MultiheadAttention(n_emb, n_head, batch_first=True)
        mask = torch.triu(torch.ones(horizon, horizon, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask)
        self.head = nn.Linear(n_emb, input_dim)

    def forward(self, sample: torch.Tensor, timestep: Union[torch.Tensor, float, int]):
        if not torch.is_tensor(timestep):
            timestep = torch.tensor([timestep], dtype=torch.float32)
        t = self.time_emb(timestep.float().reshape(-1, 1)).unsqueeze(1)
        h = self.input_emb(sample) + t
        y, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        return self.head(y)


def build():
    return StepDenoiser(input_dim=10, horizon=8)
'''


def test_a_number_for_a_timestep_and_the_length_its_mask_was_built_for(capsys, tmp_path):
    path = tmp_path / "denoiser.py"
    path.write_text(textwrap.dedent(SOURCE))
    code, report = cli_json(capsys, f"{path}::StepDenoiser", "--no-own-calls")
    (target,) = report["targets"]
    assert target["error"] is None, target["error"]
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert any(n.startswith(f"T={target['dims']['T']}, the length of a table the module builds")
               for n in target["notes"]), target["notes"]
    assert code == 0


def test_the_number_only_where_the_annotation_allows_one():
    from shapetrace.drive.input_reads import number_input

    def forward(sample, timestep: Union[torch.Tensor, float, int], mask: Optional[torch.Tensor],
                scale: Union[torch.Tensor, float] = 1.0, count: int = 3):
        return sample

    params = inspect.signature(forward).parameters
    hints = typing.get_type_hints(forward)
    assert number_input(params["timestep"], hints["timestep"]).value == 1
    assert number_input(params["mask"], hints["mask"]) is None  # a tensor or None: no number
    assert number_input(params["scale"], hints["scale"]) is None  # a default of its own
    assert number_input(params["sample"], None) is None


ENCODER = '''
import torch.nn as nn


def pad_mask(seq, pad_idx):
    return (seq != pad_idx).unsqueeze(-2)


class TokenEncoder(nn.Module):
    def __init__(self, n_src_vocab, d_model, pad_idx=0):
        super().__init__()
        self.src_word_emb = nn.Embedding(n_src_vocab, d_model, padding_idx=pad_idx)

    def forward(self, src_seq, src_mask):
        return self.src_word_emb(src_seq) * src_mask.transpose(-1, -2)


class Seq2Seq(nn.Module):
    def __init__(self, n_src_vocab, d_model, n_head, src_pad_idx=0):
        super().__init__()
        self.src_pad_idx = src_pad_idx
        self.encoder = TokenEncoder(n_src_vocab, d_model, pad_idx=src_pad_idx)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)

    def forward(self, src_seq):
        src_mask = pad_mask(src_seq, self.src_pad_idx)
        h = self.encoder(src_seq, src_mask)
        return self.attn(h, h, h, key_padding_mask=src_seq == self.src_pad_idx,
                         need_weights=False)[0]
'''


def test_token_ids_read_by_the_embedding_of_the_module_they_are_handed_to(capsys, tmp_path):
    path = tmp_path / "seq2seq.py"
    path.write_text(textwrap.dedent(ENCODER))
    code, report = cli_json(capsys, f"{path}::Seq2Seq", "--no-own-calls")
    (target,) = report["targets"]
    assert target["error"] is None, target["error"]
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert code == 0


def test_the_receivers_first_layer_reads_an_input_handed_on(tmp_path):
    import importlib.util

    from shapetrace.drive.input_reads import spec_by_receiver

    path = tmp_path / "seq2seq_receivers.py"
    path.write_text(textwrap.dedent(ENCODER))
    spec = importlib.util.spec_from_file_location("seq2seq_receivers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = spec_by_receiver("src_seq", module.Seq2Seq.forward, module.Seq2Seq)
    assert (found.name, tuple(found.dims), found.dtype) == ("src_seq", ("B", "T"), "long")
