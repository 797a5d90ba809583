"""Modules built and called with nothing declared, read from their own code: per-stage list
defaults kept, channels handed on through a conditional, a class a decorator rebinds named as
its module names it, a table filled in feature pairs given an even width, and an input read
from the parameters of the code it is handed to. None of it a finding."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange

import resolved
import shapetrace as st
from shapetrace.drive.infer import infer_init, infer_inputs
from shapetrace.drive.targets import resolve_targets
from shapetrace.drive.usage import meaning_by_use
from shapetrace.base.dims import Dims


# --- a list the project passes stands for one value per stage -----------------------------------

class StagedMixer(nn.Module):
    """Stages of attention whose depth and head count come one per stage, as the project's
    builder below passes them; a number there would fail (``sum(depth)``)."""

    def __init__(self, dim, depth, heads):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(dim, dim) for stage in range(len(depth))
                                    for _ in range(depth[stage]))
        self.gains = [heads[stage] ** -0.5 for stage in range(len(depth)) for _ in range(depth[stage])]
        self.total = sum(depth)

    def forward(self, x):
        for block, gain in zip(self.blocks, self.gains):
            x = x + gain * torch.tanh(block(x))
        return x


def small_staged_mixer(dim=24):
    return StagedMixer(dim, depth=[1, 2], heads=[2, 4])


def test_a_list_the_project_passes_for_a_size_named_parameter_is_kept():
    result = st.check(StagedMixer).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("depth=[1, 2] as") and "one per stage" in n for n in result.notes)


# --- a list default stands for one value per stage ----------------------------------------------

class Stage(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return x + y.transpose(1, 2).reshape(B, T, C)


class Staged(nn.Module):
    """One attention per stage, with its own head count from a per-stage list."""

    def __init__(self, dim, heads=[1, 2], depths=(1, 1)):
        super().__init__()
        self.stages = nn.ModuleList(Stage(dim, heads[i]) for i in range(len(depths)))

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


def test_a_list_default_is_kept_not_replaced_by_a_size():
    init = infer_init(Staged, Dims())
    assert init["heads"] == [1, 2] and init["depths"] == (1, 1)
    result = st.check(Staged).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


class Hierarchy(nn.Module):
    """Stages that double the width and the heads together, from defaults that fit each other
    (96 channels in 3 heads: a head size of 32 at every stage)."""

    def __init__(self, embed_dim=96, num_heads=(3, 6), depths=(1, 1)):
        super().__init__()
        self.stages = nn.ModuleList(Stage(embed_dim * 2 ** i, num_heads[i]) for i in range(len(depths)))
        self.widen = nn.ModuleList(nn.Linear(embed_dim * 2 ** i, embed_dim * 2 ** (i + 1))
                                   for i in range(len(depths) - 1))

    def forward(self, x):
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i < len(self.widen):
                x = self.widen[i](x)
        return x


class HierarchyOfWidths(Hierarchy):
    """The widths per stage a default too: the defaults are kept together."""

    def __init__(self, embed_dims=(64, 128), num_heads=(1, 2)):
        nn.Module.__init__(self)
        self.stages = nn.ModuleList(Stage(w, h) for w, h in zip(embed_dims, num_heads))
        self.widen = nn.ModuleList([nn.Linear(embed_dims[0], embed_dims[1])])


def test_heads_per_stage_follow_a_width_the_probe_chose():
    notes = []
    init = infer_init(Hierarchy, Dims(), notes=notes)
    assert init["embed_dim"] == 143 and init["num_heads"] == (11, 22), init
    assert any(n.startswith("num_heads=(11, 22): its default (3, 6)") for n in notes), notes
    result = st.check(Hierarchy).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    init = infer_init(HierarchyOfWidths, Dims())
    assert init["embed_dims"] == (64, 128) and init["num_heads"] == (1, 2), init
    assert infer_init(Hierarchy, Dims(), given={"num_heads": [1, 2]})["num_heads"] == [1, 2]


# --- channels handed on through a conditional ---------------------------------------------------

class Down(nn.Module):
    def __init__(self, in_channels, out_channels, num_layers=2):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv2d(in_channels if i == 0 else out_channels, out_channels, 3, padding=1)
            for i in range(num_layers))

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(conv(x))
        return x


def test_channels_handed_on_through_a_conditional_are_read():
    assert meaning_by_use(Down, "in_channels") == "C"
    assert meaning_by_use(Down, "out_channels") == "C"
    result = st.check(Down).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


# --- a class a decorator rebinds ----------------------------------------------------------------

DECORATED = textwrap.dedent('''
    import torch.nn as nn

    def registered(cls):
        class Wrapped(cls):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
        Wrapped.__name__ = cls.__name__
        return Wrapped

    @registered
    class Mixer(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            self.proj = nn.Linear(d_model, d_model)

        def forward(self, x):
            return self.proj(x)

    @registered
    class Gate(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            self.proj = nn.Linear(d_model, d_model)

        def forward(self, x):
            return x * self.proj(x).sigmoid()
''')


def test_a_class_a_decorator_rebinds_is_named_as_its_module_names_it(tmp_path, monkeypatch):
    (tmp_path / "decorated.py").write_text(DECORATED)
    monkeypatch.chdir(tmp_path)
    targets = resolve_targets("decorated.py")
    assert [t.display for t in targets] == ["decorated.py::Mixer", "decorated.py::Gate"]
    (again,) = resolve_targets("decorated.py::Gate")  # the name reported finds it again
    assert again.cls is targets[1].cls
    result = st.check(again.cls).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


# --- a sinusoidal table filled in feature pairs -------------------------------------------------

class PairedTable(nn.Module):
    """Sinusoidal positions written two features at a time: an odd width overruns the table."""

    def __init__(self, d_model, max_len=32):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        for pos in range(max_len):
            for i in range(0, d_model, 2):
                pe[pos, i] = math.sin(pos / 10000 ** (i / d_model))
                pe[pos, i + 1] = math.cos(pos / 10000 ** (i / d_model))
        self.register_buffer("pe", pe)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(x + self.pe[: x.size(1)])


def test_a_table_filled_in_feature_pairs_gets_an_even_width():
    result = st.check(PairedTable).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert result.dims["C"] % 2 == 0
    assert any("an even width" in n for n in result.notes), result.notes


# --- an input read from where it is handed ------------------------------------------------------

class Attend(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))

    def forward(self, q, k, v):
        B, T, C = q.shape
        split = lambda t: t.view(B, -1, self.h, C // self.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(split(self.q(q)), split(self.k(k)), split(self.v(v)))
        return y.transpose(1, 2).reshape(B, T, C)


class CrossLayer(nn.Module):
    """A decoder layer whose encoder output has a name of its own."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.self_attn = Attend(d_model, heads)
        self.cross = Attend(d_model, heads)

    def forward(self, x, enc_states_out):
        x = x + self.self_attn(x, x, x)
        return x + self.cross(x, enc_states_out, enc_states_out)


class Confused(nn.Module):
    """The same unnamed input handed as queries to one and keys to another: no one reading."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.a = Attend(d_model, heads)
        self.b = Attend(d_model, heads)

    def forward(self, x, thing):
        return self.a(thing, x, x) + self.b(x, thing, thing)


def test_an_input_is_read_from_the_parameters_it_is_handed_to():
    specs = infer_inputs(CrossLayer, Dims())
    assert [(s.name, s.dims) for s in specs] == [("x", ("B", "T", "C")),
                                                 ("enc_states_out", ("B", "S", "C"))]
    result = st.check(CrossLayer).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert "S" in result.dims


def test_an_input_handed_as_two_things_is_asked_for():
    result = st.check(Confused).targets[0]
    assert result.error is not None and "thing" in result.error


# --- a value the project's own code passes ------------------------------------------------------

class Norm(nn.Module):
    def __init__(self, dim, kind):
        super().__init__()
        self.kind = kind
        self.norm = nn.LayerNorm(dim, elementwise_affine=kind == "affine")

    def forward(self, x):
        return self.norm(x)


class Widened(nn.Module):
    def __init__(self, dim, factor):
        super().__init__()
        hidden = int(dim * factor)
        self.up, self.down = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Layer(nn.Module):
    def __init__(self, dim, factor, kind):
        super().__init__()
        self.norm = Norm(dim, kind)
        self.ffn = Widened(dim, factor)

    def forward(self, x):
        return x + self.ffn(self.norm(x))


class Net(nn.Module):
    def __init__(self, dim=64, factor=2.5, kind="affine"):
        super().__init__()
        self.layer = Layer(dim, factor, kind)

    def forward(self, x):
        return self.layer(x)


def test_a_value_is_taken_as_the_project_s_code_passes_it():
    notes: list[str] = []
    init = infer_init(Widened, Dims(), notes=notes)
    assert init["factor"] == 2.5  # Layer hands its own on; Net's default says what it is
    assert any(n.startswith("factor=2.5 as test_own_code_readings.py:") for n in notes), notes
    assert infer_init(Norm, Dims())["kind"] == "affine"
    result = st.check(Norm).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


# --- a nested config ----------------------------------------------------------------------------

class NestedAttention(nn.Module):
    """Sizes read from a config's sections: ``config.transformer["num_heads"]``."""

    def __init__(self, config):
        super().__init__()
        self.heads = config.transformer["num_heads"]
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.drop = nn.Dropout(config.transformer.get("dropout_rate", 0.1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.drop(y.transpose(1, 2).reshape(B, T, C))


def test_a_nested_config_is_made_from_the_fields_its_sections_are_read_for():
    (config,) = infer_init(NestedAttention, Dims()).values()
    dims = Dims()
    assert config.hidden_size == dims["C"] and config["hidden_size"] == dims["C"]
    assert config.transformer["num_heads"] == dims["H"]
    result = st.check(NestedAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


# --- files imported as their code imports them --------------------------------------------------

def test_a_folder_without_init_whose_file_imports_relatively_is_a_package(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "parts.py").write_text("import torch.nn as nn\nWIDTH_OF = nn.Linear\n")
    (tmp_path / "models" / "net.py").write_text(textwrap.dedent('''
        import torch.nn as nn
        from .parts import WIDTH_OF

        class Net(nn.Module):
            def __init__(self, d_model):
                super().__init__()
                self.proj = WIDTH_OF(d_model, d_model)

            def forward(self, x):
                return self.proj(x)
    '''))
    monkeypatch.chdir(tmp_path)
    (target,) = resolve_targets("models/net.py")
    assert target.display == "models/net.py::Net"


def test_a_folder_the_file_adds_to_sys_path_is_searched_from_the_file(tmp_path, monkeypatch):
    code = tmp_path / "code"
    (code / "helpers").mkdir(parents=True)
    (code / "helpers" / "gating.py").write_text("import torch\ndef gate(x):\n    return x.sigmoid()\n")
    (code / "model.py").write_text(textwrap.dedent('''
        import sys
        sys.path.append('helpers')
        import torch.nn as nn
        from gating import gate

        class Gated(nn.Module):
            def __init__(self, d_model):
                super().__init__()
                self.proj = nn.Linear(d_model, d_model)

            def forward(self, x):
                return gate(self.proj(x))
    '''))
    monkeypatch.chdir(tmp_path)  # run from the project's root, not from code/
    (target,) = resolve_targets("code/model.py")
    assert target.display == "code/model.py::Gated"


def test_a_module_meant_from_the_projects_own_path_is_found_by_the_name_it_defines(tmp_path, monkeypatch):
    """``from utils import PAD`` in src/model/, where the package src/utils/ is found first and
    src/utils/utils.py (put on PYTHONPATH by the project's scripts) defines PAD."""
    src = tmp_path / "src"
    (src / "utils").mkdir(parents=True)
    (src / "model").mkdir()
    (src / "utils" / "__init__.py").write_text("")
    (src / "utils" / "utils.py").write_text("PAD = -1\n\ndef lengths(x):\n    return x.shape[1]\n")
    (src / "model" / "decoder.py").write_text(textwrap.dedent('''
        import torch.nn as nn
        from utils import PAD, lengths

        class Step(nn.Module):
            def __init__(self, d_model):
                super().__init__()
                self.proj = nn.Linear(d_model, d_model)

            def forward(self, x):
                return self.proj(x) * (lengths(x) != PAD)
    '''))
    monkeypatch.chdir(src)
    (target,) = resolve_targets("model/decoder.py")
    assert target.display == "model/decoder.py::Step"


# --- an image an einops pattern asks for --------------------------------------------------------

class ChannelNorm(nn.Module):
    """A norm over the channels of an image, done as tokens: (B, C, H, W) -> (B, H*W, C)."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        tokens = self.norm(rearrange(x, "b c h w -> b (h w) c"))
        return rearrange(tokens, "b (h w) c -> b c h w", h=x.shape[2], w=x.shape[3])


def test_an_input_an_einops_pattern_reads_as_an_image_is_tried_as_one():
    result = st.check(ChannelNorm).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("x read as an image") for n in result.notes), result.notes


# --- inputs read from the first layer they reach, and lengths ----------------------------------

class PaddedAttention(nn.Module):
    """Inputs with names of their own, and true lengths that mask the padded keys."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.norm = nn.LayerNorm(d_model)
        self.to_q = nn.Linear(d_model, d_model)
        self.to_kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, query_rows, memory_rows, memory_lengths):
        B, T, C = query_rows.shape
        same = torch.equal(query_rows, memory_rows)
        q = self.to_q(self.norm(query_rows)).view(B, T, self.h, -1).transpose(1, 2)
        k, v = self.to_kv(memory_rows).view(B, memory_rows.size(1), 2, self.h, -1).permute(2, 0, 3, 1, 4)
        keep = torch.arange(memory_rows.size(1))[None, :] < memory_lengths[:, None]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        return query_rows + y.transpose(1, 2).reshape(B, T, C) * (1.0 if same or not same else 0.0)


def test_inputs_are_read_from_the_first_layer_they_reach_and_lengths_are_whole():
    specs = infer_inputs(PaddedAttention, Dims())
    dims = Dims()
    assert [(s.name, s.dims) for s in specs] == [("query_rows", ("B", "T", "C")),
                                                 ("memory_rows", ("B", "T", "C")),
                                                 ("memory_lengths", ("B",))]
    assert specs[2].dtype == "long" and specs[2].low == dims["T"]  # every sequence whole
    result = st.check(PaddedAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


# --- a guessed dtype that does not fit ----------------------------------------------------------

class SmoothedLoss(nn.Module):
    """Scores and the ids of the right classes, both named plainly: the ids index a scatter."""

    def __init__(self, eps=0.1):
        super().__init__()
        self.eps = eps

    def forward(self, inputs, tgt):
        flat = inputs.reshape(-1, inputs.size(-1))
        ids = tgt.reshape(-1)
        one_hot = torch.zeros_like(flat).scatter(1, ids.unsqueeze(1), 1.0)
        smooth = one_hot * (1 - self.eps) + self.eps / flat.size(1)
        return -(smooth * flat.log_softmax(-1)).sum(-1).mean()


def test_a_float_guess_an_op_refuses_as_an_index_is_no_finding():
    result = st.check(SmoothedLoss).targets[0]
    assert result.diagnostics == [], result.diagnostics
    assert "'tgt'" in result.error and "may hold integers" in result.error, result.error


# --- keys read at the queries' length keep their mask's readings open --------------------------

class RelativeScores(nn.Module):
    """Keys of the queries' length only (a position term of length T is added to the scores),
    and a key mask unsqueezed for the heads: (B, 1, S) after the module adds an axis."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.dh = num_heads, d_model // num_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.p = nn.Linear(d_model, d_model, bias=False)

    def forward(self, query, key, value, pos_embedding, mask):
        B, T, C = query.shape
        split = lambda t: t.view(B, -1, self.h, self.dh).transpose(1, 2)
        q, k, v, p = split(self.q(query)), split(self.k(key)), split(self.v(value)), split(self.p(pos_embedding))
        scores = (q @ k.transpose(-2, -1) + q @ p.transpose(-2, -1)) / math.sqrt(self.dh)
        scores = scores.masked_fill(mask.unsqueeze(1), float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


def test_keys_read_at_the_queries_length_with_their_mask_read_again():
    result = st.check(RelativeScores).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("key, value read as long as the queries") for n in result.notes)


# --- a width the code fixes itself --------------------------------------------------------------

MEL_BINS = 80  # a module-level constant, as a project's hyper-parameters file sets it


class MelPostNet(nn.Module):
    """Frames of MEL_BINS features, refined by convolutions whose channels the constant fixes."""

    def __init__(self, hidden):
        super().__init__()
        self.inp = nn.Conv1d(MEL_BINS, hidden, 5, padding=2)
        self.out = nn.Conv1d(hidden, MEL_BINS, 5, padding=2)

    def forward(self, x):
        return x + self.out(torch.tanh(self.inp(x.transpose(1, 2)))).transpose(1, 2)


def test_a_width_the_code_fixes_is_read_not_reported():
    result = st.check(MelPostNet).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert result.dims["C"] == MEL_BINS
    assert any(n.startswith("C=80, the width the module's own code fixes") for n in result.notes)


class FramePrenet(nn.Module):
    """Linear layers over frames of the width its callers pass, run in a loop over a list."""

    def __init__(self, n_in, sizes=(32, 16)):
        super().__init__()
        widths = [n_in, *sizes[:-1]]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, sizes))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class FrameEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.prenet = FramePrenet(40)

    def forward(self, x):
        return self.prenet(x)


def test_a_linear_width_its_callers_pass_is_read_not_reported():
    """The guessed width meets the first linear layer's 40 inputs (a matrix product that cannot
    be made): the width is read from the layer, as for a convolution's channels."""
    result = st.check(FramePrenet).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert result.dims["C"] == 40
    assert any(n.startswith("C=40, the width the module's own code fixes") for n in result.notes)


# --- a scale judged on inputs whose width was guessed --------------------------------------------

class PerHeadDot(nn.Module):
    """Scaled dot-product attention over inputs that are already per head, (B, H, T, d)."""

    def __init__(self, d_head):
        super().__init__()
        self.d_head = d_head

    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        return scores.softmax(dim=-1) @ v


def test_a_scale_judged_on_inputs_sized_by_the_head_size_the_module_takes():
    """Sized by its head size alone, its inputs get d features: scaled by sqrt(d_head), right."""
    result = st.check(PerHeadDot).targets[0]
    assert result.ok and not [d for d in result.diagnostics if d.rule == "attention-scale"], \
        result.diagnostics
    assert any(n.startswith("q, k, v read with d features") for n in result.notes), result.notes
    declared = st.check(PerHeadDot, inputs=["q=B,H,T,d", "k=B,H,T,d", "v=B,H,T,d"]).targets[0]
    assert declared.ok and not declared.diagnostics, declared.diagnostics


# --- a hidden size that is the width -------------------------------------------------------------

class PositionsOfHiddenWidth(nn.Module):
    """``hidden_dim`` is the model width here (many codes use it for a feed-forward width): a
    table of hidden_dim features is added to the d_model-wide projection."""

    def __init__(self, d_model, hidden_dim, max_len=64):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("pos", torch.randn(1, max_len, hidden_dim) * 0.02)

    def forward(self, x):
        return self.proj(x) + self.pos[:, : x.size(1)]


def test_a_hidden_size_added_to_the_width_is_read_as_the_width():
    result = st.check(PositionsOfHiddenWidth).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("hidden_dim read as the width (C)") for n in result.notes), result.notes


# --- a width and a length the code fixes at once ------------------------------------------------

TABLE_WIDTH, TABLE_ROWS = 96, 40  # module-level settings, as a project's parameters file has them


class FixedTablePositions(nn.Module):
    """A sinusoid table of the project's own width and length, added uncut: the input must be
    exactly that long and that wide."""

    def __init__(self):
        super().__init__()
        pos = torch.arange(TABLE_ROWS)[:, None] / 10000 ** (torch.arange(TABLE_WIDTH)[None] / TABLE_WIDTH)
        self.register_buffer("table", torch.where(torch.arange(TABLE_WIDTH) % 2 == 0, pos.sin(), pos.cos())[None])

    def forward(self, x):
        return x * math.sqrt(TABLE_WIDTH) + self.table


def test_a_width_and_a_length_the_code_fixes_are_both_read():
    result = st.check(FixedTablePositions).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert (result.dims["C"], result.dims["T"]) == (TABLE_WIDTH, TABLE_ROWS)


# --- lengths shapetrace chose apart -------------------------------------------------------------

class OneStepAdditive(nn.Module):
    """Additive attention for one decoder step: the query is (B, 1, C), its keys (B, S, C)."""

    def __init__(self, dim):
        super().__init__()
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.score = nn.Linear(dim, 1)

    def forward(self, query, key, value):
        score = self.score(torch.tanh(self.k_proj(key) + self.q_proj(query))).squeeze(-1)
        context = torch.bmm(score.softmax(dim=-1).unsqueeze(1), value)
        context += query
        return context


def test_lengths_shapetrace_chose_apart_are_no_finding():
    result = st.check(OneStepAdditive).targets[0]
    assert result.diagnostics == [] and "query=B,1,C" in result.error, (result.error, result.diagnostics)
    declared = st.check(OneStepAdditive, inputs=["query=B,1,C", "key=B,S,C", "value=B,S,C"]).targets[0]
    assert declared.error is None and declared.ok, (declared.error, declared.diagnostics)


# --- a count the width is divided by is the head count --------------------------------------------

class CountedHeads(nn.Module):
    """Splits the width by a count whose name says nothing (``head_count``)."""

    def __init__(self, head_count, model_dim):
        assert model_dim % head_count == 0
        super().__init__()
        self.per_head = model_dim // head_count
        self.count = head_count
        self.kv = nn.Linear(model_dim, 2 * model_dim)
        self.q = nn.Linear(model_dim, model_dim)

    def forward(self, memory, query):
        b = query.size(0)
        k, v = (t.view(b, -1, self.count, self.per_head).transpose(1, 2) for t in self.kv(memory).chunk(2, -1))
        q = self.q(query).view(b, -1, self.count, self.per_head).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(self.per_head), dim=-1)
        return (w @ v).transpose(1, 2).reshape(b, -1, self.count * self.per_head)


def test_a_count_the_width_is_divided_by_is_read_as_the_head_count():
    assert meaning_by_use(CountedHeads, "head_count") == "H"
    assert infer_init(CountedHeads, Dims())["head_count"] == Dims()["H"]
    result = st.check(CountedHeads).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


# --- queries, keys and values with their heads split --------------------------------------------

class SplitAttend(nn.Module):
    """Attention over heads already split: q, k, v (batch, heads, length, head size)."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)

    def forward(self, q, k, v):
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * q.shape[-1] ** -0.5
        return torch.einsum("b h i j, b h j d -> b h i d", self.drop(sim.softmax(dim=-1)), v)


class SplitAttendOverQueries(SplitAttend):
    def forward(self, q, k, v):
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * q.shape[-1] ** -0.5
        return torch.einsum("b h i j, b h j d -> b h i d", sim.softmax(dim=-2), v)


class UnpackedHeads(nn.Module):
    def forward(self, query, key, value):
        b, h, t, d = query.shape
        w = (query @ key.transpose(-2, -1) / d ** 0.5).softmax(-1)
        return (w @ value).transpose(1, 2).reshape(b, t, h * d)


def test_queries_the_code_wants_with_four_axes_are_read_with_their_heads_split():
    for cls in (SplitAttend, UnpackedHeads):
        result = st.check(cls).targets[0]
        assert result.error is None and result.ok, (cls, result.error, result.diagnostics)
        assert any("read with their heads split, (B, H, T, d)" in n for n in result.notes), result.notes
    report = st.check(SplitAttendOverQueries)
    assert [d.rule for d in report.errors] == ["softmax-axis"], report.diagnostics


# --- an odd head size halved and doubled back ----------------------------------------------------

class PairedRotary(nn.Module):
    """Rotary frequencies for every other feature, doubled back (an odd head size gives one
    more)."""

    def __init__(self, dim, dim_head=64, heads=8):
        super().__init__()
        self.heads, self.dim_head = heads, dim_head
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim_head, 2).float() / dim_head))
        self.qkv = nn.Linear(dim, 3 * heads * dim_head)
        self.out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        b, n, _ = x.shape
        freqs = torch.einsum("i, j -> i j", torch.arange(n).float(), self.inv_freq)
        pos = torch.cat((freqs, freqs), dim=-1)
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.dim_head).permute(2, 0, 3, 1, 4)
        half = lambda t: torch.cat((-t[..., t.shape[-1] // 2:], t[..., :t.shape[-1] // 2]), -1)  # noqa: E731
        q, k = (t * pos.cos() + half(t) * pos.sin() for t in (q, k))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, -1))


def test_an_odd_head_size_halved_and_doubled_back_is_read_even():
    result = st.check(PairedRotary).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("an even head size" in n for n in result.notes), result.notes


# --- fed as its block feeds it ------------------------------------------------------------------

def test_a_module_the_guessed_inputs_do_not_fit_is_checked_as_its_block_feeds_it():
    """The relative table has 2T-1 rows: the guess fails, the block of the same file that makes
    the table builds, runs and feeds the attention, and the check runs on that."""
    result = resolved.result(Path(__file__).with_name("data") / "in_parent" / "relative.py",
                             "RelativeScores")
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("checked as RelativeBlock builds it") for n in result.notes), result.notes


def test_a_module_fed_by_its_block_is_checked_on_its_inputs_as_the_block_passed_them():
    """The block's call is run once to see that it fits; a forward that turns its keys in place
    (``k.transpose_``) must find them as the block passed them when it is checked: no false
    op-failed, and the write into the caller's tensor is found."""
    result = resolved.result(Path(__file__).with_name("data") / "in_parent" / "inplace.py",
                             "TurnedKeys")
    assert result.error is None, result.error
    assert any(n.startswith("checked as Heads builds it") for n in result.notes), result.notes
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["input-mutated"], \
        result.diagnostics


def test_a_module_is_checked_as_a_parent_feeds_it_only_once_the_parent_runs():
    """The image model runs its scaling layer first, then fails on the vectors guessed for it:
    what it handed the layer then was made from that guess (an outer product of the batch), so
    the layer is fed as the model feeds it once the model's input is read as its check reads it
    (an image), not a broadcast warning from the guess."""
    result = resolved.result(Path(__file__).with_name("data") / "in_parent" / "misfit.py",
                             "LevelScale")
    assert result.error is None, result.error
    assert any(n.startswith("checked as ImageModel builds it") for n in result.notes), result.notes
    assert result.to_json()["trace"][-1]["inputs"][0] == "(B, C, 8, 8)"
    assert result.diagnostics == []
    result = resolved.result(Path(__file__).with_name("data") / "in_parent" / "misfit.py",
                             "SequenceScale")  # its parent fails later, on a head left None
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("checked as UnfinishedModel builds it") for n in result.notes), \
        result.notes


# --- a name kept off a builtin by a trailing underscore ------------------------------------------

class UnderscoredInput(nn.Module):
    """``input_``, as code that keeps the builtin ``input`` free names its data."""

    def __init__(self, num_hidden):
        super().__init__()
        self.layer = nn.Linear(num_hidden, num_hidden)

    def forward(self, input_):
        return input_ + torch.relu(self.layer(input_))


class UnderscoredIds(nn.Module):
    """``input_`` handed to an embedding: token ids, as ``x`` would be."""

    def __init__(self, vocab_size, num_hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, num_hidden)
        self.layer = nn.Linear(num_hidden, num_hidden)

    def forward(self, input_):
        return self.layer(self.embed(input_))


def test_a_name_with_a_trailing_underscore_reads_as_the_name():
    (spec,) = infer_inputs(UnderscoredInput.forward, Dims())
    assert (spec.name, spec.dims) == ("input_", ("B", "T", "C")), spec
    result = st.check(UnderscoredInput).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    result = st.check(UnderscoredIds).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("input_ read as token ids") for n in result.notes), result.notes
