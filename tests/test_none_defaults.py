"""Constructor arguments left at a default of None that the constructor reads as a size
(``nn.Linear(cond_dim, ...)``, ``c + c_skip``): the module is built again with the size its name
or its use says, with a note; a None the constructor tests, a None the caller gave and a
failure that is not about a None stay as they were."""

from __future__ import annotations

import copy

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
    assert note.startswith(f"cond_dim={c}: left at its default None, the constructor raised "
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


class Bottleneck(nn.Module):
    """A config whose ``bottleneck_dim`` nothing names: made None, then read as a size."""

    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.latents = nn.Parameter(torch.empty(1, config.bottleneck_dim, config.n_embd))
        nn.init.normal_(self.latents, std=0.02)
        self.proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        latents = self.latents.expand(x.shape[0], -1, -1)
        weights = (latents @ x.transpose(1, 2)).softmax(dim=-1)
        return self.proj(weights @ x)


class Initialised(nn.Module):
    """Weights drawn with the config's ``initializer_range``, in a method the constructor
    applies."""

    def __init__(self, args):
        super().__init__()
        self.args = args
        self.proj = nn.Linear(args.hidden_size, args.hidden_size)
        self.apply(self.init_weights)

    def init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=self.args.initializer_range)

    def forward(self, x):
        return self.proj(x)


def _window_offsets(size):
    rows, cols = torch.meshgrid(torch.arange(size[0]), torch.arange(size[1]), indexing="ij")
    coords = torch.stack((rows.flatten(), cols.flatten()))
    offsets = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)
    return (offsets[..., 0] + size[0] - 1) * (2 * size[1] - 1) + offsets[..., 1] + size[1] - 1


class WindowBias(nn.Module):
    """A window's side read by index in a helper the constructor calls."""

    def __init__(self, dim, window_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.rows = window_size[:1]  # a slice: not read by constant indices alone
        self.register_buffer("index", _window_offsets(window_size))
        self.table = nn.Parameter(torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        bias = self.table[self.index.view(-1)].view(N, N, -1).permute(2, 0, 1)
        scores = (q @ k.transpose(-2, -1)) * (C // self.num_heads) ** -0.5 + bias
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, N, C))


def test_a_config_field_made_none_and_read_as_a_size_is_set():
    result = st.check(Bottleneck).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith(f"config.bottleneck_dim={result.dims['C']}: left at None, the constructor raised TypeError") for n in result.notes)


def test_an_initialiser_range_is_a_small_standard_deviation():
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_init

    assert infer_init(Initialised, Dims())["args"].initializer_range == 0.02
    result = st.check(Initialised).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


def test_a_side_read_by_index_is_given_as_sides():
    result = st.check(WindowBias).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    note = next(n for n in result.notes if n.startswith("window_size=("))
    assert "TypeError" in note and "--init window_size=VALUE" in note


class CopiedConfig(nn.Module):
    """Copies the config it is given (``copy.deepcopy``) and changes the copy's width: the
    standard library's code it is handed to reads no field of it."""

    def __init__(self, config):
        super().__init__()
        self.down = nn.Linear(config.hidden_size, config.low_rank_size)
        narrow = copy.deepcopy(config)
        narrow.hidden_size = config.low_rank_size
        self.up = nn.Linear(narrow.hidden_size, config.hidden_size)

    def forward(self, x):
        return x + self.up(F.gelu(self.down(x)))


def test_a_config_copied_by_the_standard_library_is_made_of_its_own_fields():
    result = st.check(CopiedConfig).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


class TransposedUp(nn.Module):
    """``output_padding=None`` handed to torch, which takes a number (its own default 0);
    ``padding=None`` tested and made by the constructor."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 output_padding=None):
        super().__init__()
        if padding is None:
            padding = (kernel_size - 1) // 2
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride,
                                       padding=padding, output_padding=output_padding)

    def forward(self, x):
        return self.conv(x)


class KeyWidth(nn.Module):
    """``kdim=None`` handed to torch, whose own default is None too: kept."""

    def __init__(self, embed_dim, num_heads, kdim=None):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, kdim=kdim, vdim=kdim, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def test_a_none_torch_refuses_takes_torchs_own_default():
    result = st.check(TransposedUp).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("output_padding=0, the default of the torch argument") for n in result.notes)
    assert not any(n.startswith("padding=") for n in result.notes)


def test_a_none_torch_takes_itself_stays_none():
    result = st.check(KeyWidth).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert not any(n.startswith("kdim=") for n in result.notes)


class ContextAttention(nn.Module):
    """``context_dim``, a name of no size word shapetrace knows, read by its use: the width of
    the keys and values torch's attention takes (``kdim``)."""

    def __init__(self, dim, heads, context_dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, kdim=context_dim, vdim=context_dim, batch_first=True)

    def forward(self, x, context):
        return x + self.attn(x, context, context, need_weights=False)[0]


def test_a_width_handed_to_torchs_key_width_is_read_by_its_use():
    result = st.check(ContextAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("context_dim read as the model width (C)") for n in result.notes), result.notes


class Catalogue(nn.Module):
    """Config fields bound to names first (``count = args.catalogue``, ``self.breadth =
    breadth``) and read through them where the constructor raises on None."""

    def __init__(self, args):
        super().__init__()
        count = args.catalogue
        breadth = args.breadth
        self.breadth = breadth
        self.items = nn.Embedding(count + 2, self.breadth)
        self.mix = nn.MultiheadAttention(self.breadth, args.num_heads, batch_first=True)

    def forward(self, idx):
        h = self.items(idx)
        return self.mix(h, h, h, need_weights=False)[0]


class TriangleHead(nn.Module):
    """A causal head whose mask is a square table sized by a config field nothing names."""

    def __init__(self, config):
        super().__init__()
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.register_buffer("tri", torch.tril(torch.ones(config.span, config.span)))

    def forward(self, x):
        t = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
        scores = scores.masked_fill(self.tri[:t, :t] == 0, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


def test_config_fields_read_through_the_names_they_were_bound_to_are_set():
    result = st.check(Catalogue).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    for field in ("args.catalogue=", "args.breadth="):
        assert any(field in n and "left at None" in n for n in result.notes), result.notes


def test_a_field_sizing_both_sides_of_a_square_table_is_the_maximum_length():
    result = st.check(TriangleHead).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith(f"config.span={result.dims['L']}: left at None") for n in result.notes), result.notes
    assert result.dims["T"] < result.dims["L"]
