"""Constructors that refuse the probe sizes, built again at sizes they accept, with a note; one
that fails at every size fails as it did.

- its own tensors do not fit each other at the odd head size 13 (axial rotary frequencies made
  as ``n_heads * dim // 4`` numbers, viewed as ``(dim // 4, n_heads)``): head size 16;
- its own check that one size divides another (``assert max_len % window == 0``), both chosen
  by shapetrace: the first made the next multiple of the second;
- its own check that two sizes are equal (``assert d_model == d_word_vec``), one left at its
  default: made the other;
- a library layer's check (``embed_dim must be divisible by num_heads``) of a width left at
  its default: the head count put back to its default;
- token ids read for an input guessed as vectors, into rotary heads of the odd size: both
  readings together (the probe size read again after the token ids).

The modules are ours.
"""

from __future__ import annotations

import textwrap

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class AxialFrequencies(nn.Module):
    def __init__(self, dim, n_heads, extra=0):
        super().__init__()
        freqs = torch.linspace(0.0, 1.0, n_heads * dim // 4)
        self.register_buffer("freqs", freqs.view(dim // 4 + extra, n_heads).T.contiguous())


class GridAttention(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.n_heads, self.d_head = d_model // d_head, d_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.rope = AxialFrequencies(d_head // 2, self.n_heads)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class Windowed(nn.Module):
    def __init__(self, dim, heads, max_len, window):
        super().__init__()
        assert (max_len % window) == 0, "the length must be divisible by the window"
        self.windows = max_len // window
        self.pool = nn.AvgPool1d(window)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).reshape(B, T, C)


class DefaultWidth(nn.Module):
    def __init__(self, n_head: int = 12, n_emb: int = 96):
        super().__init__()
        self.attn = nn.MultiheadAttention(n_emb, n_head, batch_first=True)
        self.n_emb = n_emb

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def rotate_pairs(t):
    a, b = t[..., ::2], t[..., 1::2]
    return torch.stack((-b, a), dim=-1).flatten(-2)


class RotaryLM(nn.Module):
    def __init__(self, num_tokens, dim, heads, window=64):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.heads, self.window = heads, window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, num_tokens)

    def forward(self, x):
        h = self.emb(x)
        B, T, C = h.shape
        d = C // self.heads
        q, k, v = self.qkv(h).view(B, T, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        freqs = 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d)
        angles = torch.arange(T).float()[:, None] * freqs[None, :]
        cos = angles.cos().repeat_interleave(2, dim=-1)
        sin = angles.sin().repeat_interleave(2, dim=-1)
        q, k = q * cos + rotate_pairs(q) * sin, k * cos + rotate_pairs(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class TiedWidths(nn.Module):
    def __init__(self, n_vocab, d_word_vec=512, d_model=512, n_head=8):
        super().__init__()
        assert d_model == d_word_vec, \
            "the residual connections need one width throughout"
        self.emb = nn.Embedding(n_vocab, d_word_vec)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)

    def forward(self, src_seq):
        h = self.emb(src_seq)
        return h + self.attn(h, h, h, need_weights=False)[0]


class GroupNormed(nn.Module):
    def __init__(self, channels, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.norm = nn.GroupNorm(32, channels)
        self.qkv = nn.Linear(channels, 3 * channels)

    def forward(self, x):
        B, T, C = x.shape
        h = self.norm(x.transpose(1, 2)).transpose(1, 2)
        q, k, v = self.qkv(h).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)


class NeverFits(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.rope = AxialFrequencies(d_head // 2, d_model // d_head, extra=1)

    def forward(self, x):
        return self.qkv(x)


class PairedAngles(nn.Module):
    def __init__(self, dim):
        super().__init__()
        if dim % 2:
            raise ValueError("the rotary size must be even")
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))


class SplitsItsWidth(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        assert dim % n == 0
        self.heads = n
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)


class KeepsItsWidth(nn.Module):
    """A width left at its default, split into heads by a layer that checks it with names of
    its own."""

    def __init__(self, vocab, heads, width=96):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.attn = SplitsItsWidth(width, heads)

    def forward(self, idx):
        x = self.embed(idx)
        return x + self.attn(x)


class SubConfigAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.head_size = config.n_embd // config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.angles = PairedAngles(self.head_size)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.head_size).permute(2, 0, 3, 1, 4)
        angle = torch.outer(torch.arange(T).float(), self.angles.inv_freq).repeat_interleave(2, -1)
        pairs = lambda t: torch.stack((-t[..., 1::2], t[..., 0::2]), -1).flatten(-2)
        q, k = (t * angle.cos() + pairs(t) * angle.sin() for t in (q, k))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)
'''


@pytest.fixture
def path(tmp_path):
    file = tmp_path / "grid_attention.py"
    file.write_text(textwrap.dedent(SOURCE))
    return file


def test_built_again_at_a_rounder_head_size(capsys, path):
    code, report = cli_json(capsys, f"{path}::GridAttention")
    (target,) = report["targets"]
    assert target["error"] is None
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert target["dims"]["d"] == 16 and target["dims"]["C"] == 16 * target["dims"]["H"]
    assert any("head size d=16" in n and "a rounder head size than 13" in n
               and "is invalid for input of size" in n for n in target["notes"]), target["notes"]
    assert code == 0


def test_a_constructor_that_fails_at_every_size_stays_a_target_error(capsys, path):
    code, report = cli_json(capsys, f"{path}::NeverFits")
    (target,) = report["targets"]
    assert "raised RuntimeError" in target["error"] and "is invalid for input of size" in target["error"]
    assert target["diagnostics"] == []
    assert code == 2


def test_a_length_made_a_multiple_of_the_window_its_check_asks_for(capsys, path):
    code, report = cli_json(capsys, f"{path}::Windowed")
    (target,) = report["targets"]
    assert target["error"] is None
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    note = next(n for n in target["notes"] if n.startswith("max_len="))
    assert "the constructor asks that window" in note, note
    assert code == 0


def test_a_head_count_put_back_to_its_default_for_a_default_width(capsys, path):
    """Built with its default head count; its input then is the default width's, which no name
    says: an honest ask, never an op-failed from the guessed width."""
    code, report = cli_json(capsys, f"{path}::DefaultWidth")
    (target,) = report["targets"]
    assert target["diagnostics"] == []
    assert "input 'x', guessed from its name" in target["error"]
    assert "was expecting embedding dimension of 96" in target["error"]
    assert code == 2


def test_token_ids_into_rotary_heads_of_an_odd_size(capsys, path):
    code, report = cli_json(capsys, f"{path}::RotaryLM")
    (target,) = report["targets"]
    assert target["error"] is None
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert target["dims"]["d"] % 2 == 0
    notes = " ".join(target["notes"])
    assert "read as token ids" in notes and "an even head size" in notes
    assert code == 0


def test_a_width_left_at_its_default_made_equal_to_the_one_chosen(capsys, path):
    code, report = cli_json(capsys, f"{path}::TiedWidths")
    (target,) = report["targets"]
    assert target["error"] is None, target["error"]
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert any(n.startswith(f"d_word_vec={target['dims']['C']}: as d_model") for n in target["notes"]), \
        target["notes"]
    assert code == 0


def test_a_library_check_that_names_its_divisor_gets_a_width_it_divides(capsys, path):
    """GroupNorm's "divisible by num_groups (32)" names 32: a head size 32 divides, whatever the
    head count's default (no head count put back)."""
    code, report = cli_json(capsys, f"{path}::GroupNormed")
    (target,) = report["targets"]
    assert target["error"] is None, target["error"]
    assert target["dims"]["C"] % 32 == 0
    assert not any("its default" in n for n in target["notes"]), target["notes"]


def test_built_again_even_when_a_check_asks_for_an_even_size_it_does_not_name(capsys, path):
    """``raise ValueError("the rotary size must be even")`` names no size: the head size it
    was handed is the one the probe makes odd."""
    code, report = cli_json(capsys, f"{path}::SubConfigAttention")
    (target,) = report["targets"]
    assert target["error"] is None, target["error"]
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert target["dims"]["d"] % 2 == 0
    assert any("an even width" in n for n in target["notes"]), target["notes"]


def test_a_head_count_a_layer_s_own_check_asks_to_divide_a_kept_width(capsys, path):
    """``assert dim % n == 0`` in a layer built with the default width (96) and the head count
    shapetrace chose (11): the heads made a divisor of the width, named as H."""
    code, report = cli_json(capsys, f"{path}::KeepsItsWidth")
    (target,) = report["targets"]
    assert target["error"] is None, target["error"]
    assert target["dims"]["H"] * target["dims"]["d"] == 96 and 96 % target["dims"]["H"] == 0
    note = next(n for n in target["notes"] if n.startswith("heads="))
    assert "divides dim (96" in note and "()" not in note, note
    assert code == 0
