"""A model built from a dict config (``config["transformer_dim"]``) that nothing declares: each
key is read from what the code does with it, as an attribute config's fields are (a field
used as a key of the code's own table, ``ACT2FN[args.hidden_act]``, takes the table's first key). A key handed
to a layer takes that layer's size; a key the code asserts equal to another takes its value; a
kind kept on the module and branched on (``self.attn_type == "softmax"``, or handed to a
function that tests ``attn_type.startswith(...)``) takes the first branch's string; a config
handed five levels down is read there. A layer checkpointed the reentrant way
(``torch.utils.checkpoint.checkpoint(..., use_reentrant=True)``) is checked through it."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

import shapetrace as st
from shapetrace.drive.config_fields import fields_read
from shapetrace.drive.infer import infer_init
from shapetrace.base.dims import Dims


class PlainAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.drop = nn.Dropout(config["attention_dropout"])
        self.head_dim = config["head_dim"]

    def forward(self, q, k, v):
        w = (q @ k.transpose(-2, -1) / self.head_dim ** 0.5).softmax(dim=-1)
        return self.drop(w) @ v


class SigmoidAttention(PlainAttention):
    def forward(self, q, k, v):
        return torch.sigmoid(q @ k.transpose(-2, -1) / self.head_dim ** 0.5) @ v


def pick_attention(attn_type, config):
    if attn_type.startswith("softmax"):
        return PlainAttention(config)
    elif attn_type.startswith("sigmoid"):
        return SigmoidAttention(config)
    raise ValueError(attn_type)


class Heads(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dim, self.head_dim = config["transformer_dim"], config["head_dim"]
        self.num_head = config["num_head"]
        self.attn_type = config["attn_type"]
        self.qkv = nn.Linear(self.dim, 3 * self.num_head * self.head_dim)
        self.attn = pick_attention(self.attn_type, config)
        self.out = nn.Linear(self.num_head * self.head_dim, self.dim)
        self.checkpointed = self.attn_type == "softmax"

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_head, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.checkpointed:
            y = checkpoint(self.attn, q, k, v, use_reentrant=True)
        else:
            y = self.attn(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm1 = nn.LayerNorm(config["transformer_dim"])
        self.heads = Heads(config)
        self.norm2 = nn.LayerNorm(config["transformer_dim"])
        self.mlp = nn.Sequential(nn.Linear(config["transformer_dim"], config["transformer_hidden_dim"]),
                                 nn.GELU(), nn.Linear(config["transformer_hidden_dim"], config["transformer_dim"]))

    def forward(self, x):
        x = x + self.heads(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config["embedding_dim"] == config["transformer_dim"]
        self.embed = nn.Embedding(config["vocab_size"], config["embedding_dim"])
        self.layers = nn.ModuleList([Layer(config) for _ in range(config["num_layers"])])

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x)
        return x


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config["embedding_dim"] == config["transformer_dim"]
        self.embed = nn.Embedding(config["vocab_size"], config["embedding_dim"])

    def forward(self, input_ids):
        return self.embed(input_ids)


ACTIVATIONS = {"gelu": torch.nn.functional.gelu, "relu": torch.relu}


class Intermediate(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.dense = nn.Linear(args.hidden_size, args.hidden_size * 4)
        if isinstance(args.hidden_act, str):
            self.act = ACTIVATIONS[args.hidden_act]
        else:
            self.act = args.hidden_act
        self.out = nn.Linear(args.hidden_size * 4, args.hidden_size)

    def forward(self, x):
        return x + self.out(self.act(self.dense(x)))


def _config(cls):
    return infer_init(cls, Dims({}), notes=[])["config"]


def test_keys_handed_to_layers_take_their_sizes_and_kinds_their_first_branch():
    config = _config(Encoder)
    dims = Dims({})
    assert config["transformer_dim"] == config["embedding_dim"] == dims["C"]
    assert config["num_head"] == dims["H"] and config["head_dim"] == dims["d"]
    assert config["attn_type"] == "softmax"
    assert config["attention_dropout"] == 0.0  # read where pick_attention hands the config on


def test_a_key_asserted_equal_to_another_takes_its_value():
    assert "transformer_dim" in fields_read(Embeddings, "config")
    config = _config(Embeddings)
    assert config["transformer_dim"] == config["embedding_dim"] is not None


def test_the_whole_model_is_checked_through_its_checkpointed_attention():
    for cls in (Encoder, Layer, Embeddings):
        result = st.check(cls).targets[0]
        assert result.error is None, (cls.__name__, result.error)
        assert not result.skipped and not any("internal error" in n for n in result.notes), cls.__name__
        assert [d.rule for d in result.diagnostics if d.severity == "error"] == [], cls.__name__


def test_the_checkpoint_is_torch_s_own_again_after_a_check():
    from torch.utils.checkpoint import CheckpointFunction

    st.check(Layer)
    assert "apply" not in CheckpointFunction.__dict__
    x = torch.randn(2, 3, requires_grad=True)
    y = checkpoint(torch.sin, x, use_reentrant=True)
    assert y.grad_fn is not None and type(y.grad_fn).__name__.startswith("CheckpointFunction")


def test_a_field_used_as_a_key_of_the_code_s_table_takes_its_first_key():
    args = infer_init(Intermediate, Dims({}), notes=[])["args"]
    assert args.hidden_act == "gelu"
    result = st.check(Intermediate).targets[0]
    assert result.error is None, result.error
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []


class SectionedEncoder(nn.Module):
    """A config of sections, as YAML files nest them: sizes read into locals named for what
    they are, a section's key read again in another section."""

    def __init__(self, config):
        super().__init__()
        d_model = config["transformer"]["encoder_hidden"]
        n_head = config["transformer"]["encoder_head"]
        d_inner = config["transformer"]["conv_filter_size"]
        n_layers = config["transformer"]["encoder_layer"]
        d_style = config["style"]["encoder_hidden"]
        self.style = nn.Linear(d_style, d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, n_head, d_inner, dropout=0.0, batch_first=True)
            for _ in range(n_layers))

    def forward(self, x, style):
        x = x + self.style(style)[:, None]
        for layer in self.layers:
            x = layer(x)
        return x


def test_a_config_of_sections_is_read_through_the_names_it_is_bound_to():
    init = infer_init(SectionedEncoder, Dims())
    section = init["config"]["transformer"]
    dims = Dims()
    assert (section["encoder_hidden"], section["encoder_head"]) == (dims["C"], dims["H"])
    assert section["conv_filter_size"] == 4 * dims["C"] and section["encoder_layer"] == 2
    assert init["config"]["style"]["encoder_hidden"] == dims["C"]  # as its namesake
    result = st.check(SectionedEncoder, inputs=["x=B,T,C", "style=B,C"]).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
