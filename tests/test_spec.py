"""--init and --input: parsing, resolving, making tensors, and inferring them from a module."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest
import torch
from jaxtyping import Bool, Float, Float64, Int, Shaped, jaxtyped
from beartype import beartype
from torch import Tensor, nn

from shapetrace.base.dims import Dims
from shapetrace.base.errors import TargetError, UsageError
from shapetrace.base.specs import InputSpec, make_input, parse_init, parse_input, resolve_init
from shapetrace.drive.infer import infer_init, infer_inputs
from shapetrace.drive.targets import resolve_targets

DATA = Path(__file__).parent / "data" / "targets"
DIMS = Dims()


def one_line(exc_info, *fragments: str) -> str:
    message = str(exc_info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def student(name: str) -> type:
    (target,) = resolve_targets(f"{DATA / 'students.py'}::{name}")
    return target.cls


# parse_init -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("d_in=C", {"d_in": "C"}, id="dim-name-kept"),
        pytest.param("context_length=16", {"context_length": 16}, id="int"),
        pytest.param("n=-3", {"n": -3}, id="negative-int"),
        pytest.param("dropout=0.0", {"dropout": 0.0}, id="float"),
        pytest.param("eps=1e-5", {"eps": 1e-5}, id="float-exponent"),
        pytest.param("qkv_bias=true,bias=False", {"qkv_bias": True, "bias": False}, id="bools"),
        pytest.param("kv_heads=none", {"kv_heads": None}, id="none"),
        pytest.param("act=gelu", {"act": "gelu"}, id="string"),
        pytest.param("act='gelu,tanh'", {"act": "gelu,tanh"}, id="quoted-comma"),
        pytest.param('n="16"', {"n": "16"}, id="quoted-number-stays-string"),
        pytest.param(" d_in = C , d_out=C, ", {"d_in": "C", "d_out": "C"}, id="spaces-trailing-comma"),
        pytest.param(
            "d_in=C,d_out=C,context_length=16,dropout=0.0,num_heads=H",
            {"d_in": "C", "d_out": "C", "context_length": 16, "dropout": 0.0, "num_heads": "H"},
            id="raschka",
        ),
    ],
)
def test_parse_init(text, expected):
    assert parse_init(text) == expected
    assert [type(v) for v in parse_init(text).values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("d_in", "expects KEY=VALUE", id="no-equals"),
        pytest.param("=3", "not a valid argument name", id="empty-key"),
        pytest.param("2x=3", "'2x' is not a valid argument name", id="bad-key"),
        pytest.param("a=1,a=2", "'a' is given twice", id="duplicate"),
        pytest.param("a=", "no value for 'a'", id="empty-value"),
        pytest.param("a='b,c", "unterminated ' quote", id="unterminated-quote"),
    ],
)
def test_parse_init_errors(text, fragment):
    with pytest.raises(UsageError) as exc_info:
        parse_init(text)
    one_line(exc_info, "--init", fragment)


def test_resolve_init_resolves_dim_names_only():
    init = {"d_in": "C", "num_heads": "H", "act": "gelu", "n": 3, "flag": True, "none": None}
    assert resolve_init(init, DIMS) == {"d_in": 143, "num_heads": 11, "act": "gelu", "n": 3,
                                        "flag": True, "none": None}


def test_resolve_init_uses_overridden_and_added_dims():
    assert resolve_init({"d_in": "C", "k": "K"}, Dims({"d": 8, "K": 29})) == {"d_in": 88, "k": 29}


# parse_input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("x=B,T,C", InputSpec("x", ("B", "T", "C")), id="float-default"),
        pytest.param("context=B,S,C", InputSpec("context", ("B", "S", "C")), id="cross"),
        pytest.param("idx=B,T:long:V", InputSpec("idx", ("B", "T"), "long", "V"), id="tokens"),
        pytest.param("idx=B,T:int64:7", InputSpec("idx", ("B", "T"), "long", 7), id="tokens-literal-high"),
        pytest.param("idx=B,T:int", InputSpec("idx", ("B", "T"), "int"), id="int32"),
        pytest.param("mask=T,T:bool", InputSpec("mask", ("T", "T"), "bool"), id="mask"),
        pytest.param("x=B,7,C", InputSpec("x", ("B", 7, "C")), id="literal-size"),
        pytest.param("qkv=B,T,3*C", InputSpec("qkv", ("B", "T", "3*C")), id="product"),
        pytest.param("x=B,T,C:double", InputSpec("x", ("B", "T", "C"), "double"), id="double"),
        pytest.param("x=B,T,C:float64", InputSpec("x", ("B", "T", "C"), "double"), id="float64"),
        pytest.param("x=B,T,C:half", InputSpec("x", ("B", "T", "C"), "half"), id="half"),
        pytest.param("x=B,T,C:float16", InputSpec("x", ("B", "T", "C"), "half"), id="float16"),
        pytest.param("x=B,T,C:bfloat16", InputSpec("x", ("B", "T", "C"), "bfloat16"), id="bfloat16"),
        pytest.param("x=B,T,C:float32", InputSpec("x", ("B", "T", "C")), id="float32"),
        pytest.param(" x = B, T, C ", InputSpec("x", ("B", "T", "C")), id="spaces"),
    ],
)
def test_parse_input(text, expected):
    assert parse_input(text, DIMS) == expected


@pytest.mark.parametrize(
    "text",
    ["x=B,T,C", "idx=B,T:long:V", "idx=B,T:long", "mask=T,T:bool", "x=B,7,3*C"],
)
def test_input_spec_str_round_trips(text):
    assert str(parse_input(text)) == text
    assert parse_input(str(parse_input(text))) == parse_input(text)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("B,T,C", "expected NAME=DIMS", id="no-name"),
        pytest.param("=B,T", "expected NAME=DIMS", id="empty-name"),
        pytest.param("1x=B,T", "not a valid argument name", id="bad-name"),
        pytest.param("x=", "no dimensions", id="no-dims"),
        pytest.param("x=B,T,C:floot", "unknown dtype 'floot'", id="unknown-dtype"),
        pytest.param("x=B,T,Q", "unknown dimension 'Q'", id="unknown-dim"),
        pytest.param("x=B,T,3*Q", "unknown dimension 'Q'", id="unknown-dim-in-product"),
        pytest.param("idx=B,T:long:W", "unknown dimension 'W'", id="unknown-high"),
        pytest.param("x=B,0,C", "size 0 must be positive", id="zero-size"),
        pytest.param("x=B,-3,C", "size -3 must be positive", id="negative-size"),
        pytest.param("x=B,T,0*C", "must be positive", id="zero-factor"),
        pytest.param("x=B,T,C/2", "'C/2' is not a dimension", id="expression"),
        pytest.param("m=B,T:bool:V", "HIGH does not apply to bool inputs", id="high-on-bool"),
        pytest.param("idx=B,T:long:", "empty HIGH", id="empty-high"),
        pytest.param("idx=B,T:long:0", "size 0 must be positive", id="zero-high"),
        pytest.param("x=B:T:C:D", "too many ':'", id="too-many-colons"),
    ],
)
def test_parse_input_errors(text, fragment):
    with pytest.raises(UsageError) as exc_info:
        parse_input(text, DIMS)
    one_line(exc_info, f"input {text.strip()!r}", fragment)


def test_float_input_with_high_holds_whole_numbers_below_it():
    """``x=B,T,4:float:7``: codes handed in as floats (calendar fields the forward casts to
    indices), whole numbers in [0, 7), still floats."""
    import torch

    from shapetrace.base.specs import make_input

    spec = parse_input("x=B,T,4:float:7", DIMS)
    assert str(spec) == "x=B,T,4:float:7" and parse_input(str(spec)) == spec
    value = make_input(spec, DIMS, generator=torch.Generator().manual_seed(0))
    assert value.dtype == torch.float32 and value.shape == (DIMS["B"], DIMS["T"], 4)
    assert value.min() >= 0 and value.max() < 7 and torch.equal(value, value.round())
    assert value.unique().numel() > 1


def test_unknown_dim_suggests_dims_flag():
    with pytest.raises(UsageError) as exc_info:
        parse_input("x=B,T,K", DIMS)
    one_line(exc_info, "--dims K=SIZE", "known: B, T, S, H, d, C, V, L")


def test_parse_input_without_dims_accepts_any_name():
    assert parse_input("x=B,T,K") == InputSpec("x", ("B", "T", "K"))


def test_unknown_dtype_lists_the_choices():
    with pytest.raises(UsageError) as exc_info:
        parse_input("x=B,T,C:complex")
    one_line(exc_info, "float, double, half, bfloat16, long, int, bool")


# make_input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shape", "dtype"),
    [
        pytest.param("x=B,T,C", (5, 7, 143), torch.float32, id="float"),
        pytest.param("x=B,T,C:double", (5, 7, 143), torch.float64, id="double"),
        pytest.param("x=B,T,C:half", (5, 7, 143), torch.float16, id="half"),
        pytest.param("x=B,T,C:bfloat16", (5, 7, 143), torch.bfloat16, id="bfloat16"),
        pytest.param("x=B,7,C", (5, 7, 143), torch.float32, id="literal"),
        pytest.param("qkv=B,T,3*C", (5, 7, 429), torch.float32, id="product"),
        pytest.param("idx=B,T:long", (5, 7), torch.int64, id="long"),
        pytest.param("idx=B,T:int", (5, 7), torch.int32, id="int32"),
        pytest.param("mask=T,T:bool", (7, 7), torch.bool, id="bool"),
    ],
)
def test_make_input_shape_and_dtype(text, shape, dtype):
    tensor = make_input(parse_input(text), DIMS)
    assert tuple(tensor.shape) == shape
    assert tensor.dtype == dtype


def test_make_input_uses_overridden_dims():
    assert make_input(parse_input("x=B,T,C"), Dims({"d": 8, "T": 3})).shape == (5, 3, 88)


@pytest.mark.parametrize(
    ("text", "high"),
    [
        pytest.param("idx=B,T:long", 19, id="default-V"),
        pytest.param("idx=B,T:long:V", 19, id="named-V"),
        pytest.param("idx=B,T:long:3", 3, id="literal"),
        pytest.param("idx=B,T:long:T", 7, id="other-dim"),
    ],
)
def test_integer_inputs_lie_in_range(text, high):
    tensor = make_input(parse_input(text), DIMS, generator=torch.Generator().manual_seed(0))
    assert tensor.min() >= 0
    assert tensor.max() < high


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        pytest.param("mask=T,T:bool", (7, 7), id="square"),
        pytest.param("mask=B,1,T,T:bool", (5, 1, 7, 7), id="broadcast-square"),
    ],
)
def test_square_bool_input_is_causal_mask(text, shape):
    mask = make_input(parse_input(text), DIMS)
    assert mask.shape == shape
    expected = torch.ones(7, 7, dtype=torch.bool).tril()
    assert torch.equal(mask.reshape(-1, 7, 7)[0], expected)
    assert torch.equal(mask.reshape(-1, 7, 7)[-1], expected)


def test_nonsquare_bool_input_is_random():
    mask = make_input(parse_input("keep=B,T:bool"), DIMS, generator=torch.Generator().manual_seed(0))
    assert mask.shape == (5, 7)
    assert mask.any() and not mask.all()


def test_make_input_is_reproducible_with_a_generator():
    spec = parse_input("x=B,T,C")
    a = make_input(spec, DIMS, generator=torch.Generator().manual_seed(3))
    b = make_input(spec, DIMS, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_make_input_unknown_dim():
    with pytest.raises(UsageError) as exc_info:
        make_input(InputSpec("x", ("B", "K")), DIMS)
    one_line(exc_info, "unknown dimension 'K'")


# infer_inputs: from annotations ---------------------------------------------------------------


class AnnotatedAttention(nn.Module):
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        return x


class TokenModel(nn.Module):
    def forward(self, idx: Int[Tensor, "B T"]):
        return idx


class WithMask(nn.Module):
    def forward(self, x: Float[Tensor, "B T C"], mask: Bool[Tensor, "T T"]):
        return x


class WordyNames(nn.Module):
    def forward(self, x: Float[Tensor, "batch seq dim"], h: Float[Tensor, "b nh t hs"]):
        return x


class Variadic(nn.Module):
    def forward(self, x: Float[Tensor, "*batch T C"], y: Float[Tensor, "... T C"]):
        return x


class Broadcastable(nn.Module):
    def forward(self, x: Float[Tensor, "B T #C"], bias: Float[Tensor, "1 T H*d"]):
        return x


class DoubleAndAny(nn.Module):
    def forward(self, x: Float64[Tensor, "B T C"], y: Shaped[Tensor, "B T"]):
        return x


class OptionalAnnotated(nn.Module):
    def forward(self, x: Float[Tensor, "B T C"],
                context: Optional[Float[Tensor, "B S C"]] = None,
                attn_mask: Optional[Bool[Tensor, "T S"]] = None):
        return x


class MaskFirstDefault(nn.Module):
    def forward(self, x: Float[Tensor, "B T C"], mask: Bool[Tensor, "T T"] | None = None,
                context: Float[Tensor, "B S C"] | None = None):
        return x


class Checked(nn.Module):
    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"], idx: Int[Tensor, "B T"]):
        return x


class AnonymousAxis(nn.Module):
    def forward(self, x: Float[Tensor, "B _ C"]):
        return x


class UnknownAxis(nn.Module):
    def forward(self, x: Float[Tensor, "B T Q"]):
        return x


class MiddleVariadic(nn.Module):
    def forward(self, x: Float[Tensor, "B *rest C"]):
        return x


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        pytest.param(AnnotatedAttention, ["x=B,T,C"], id="float"),
        pytest.param(TokenModel, ["idx=B,T:long"], id="int-tokens"),
        pytest.param(WithMask, ["x=B,T,C", "mask=T,T:bool"], id="bool-mask-required"),
        pytest.param(WordyNames, ["x=B,T,C", "h=B,H,T,d"], id="aliases"),
        pytest.param(Variadic, ["x=B,T,C", "y=B,T,C"], id="leading-variadic"),
        pytest.param(Broadcastable, ["x=B,T,C", "bias=1,T,H*d"], id="broadcast-fixed-product"),
        pytest.param(DoubleAndAny, ["x=B,T,C:double", "y=B,T"], id="float64-and-shaped"),
        pytest.param(OptionalAnnotated, ["x=B,T,C", "context=B,S,C"], id="optional-annotated"),
        pytest.param(MaskFirstDefault, ["x=B,T,C"], id="stops-at-default-mask"),
        pytest.param(Checked, ["x=B,T,C", "idx=B,T:long"], id="jaxtyped-beartype"),
    ],
)
def test_infer_inputs_from_annotations(cls, expected):
    assert [str(s) for s in infer_inputs(cls, DIMS)] == expected


def test_infer_inputs_from_future_annotations():
    targets = {t.cls.__name__: t.cls for t in resolve_targets(str(DATA / "annotated.py"))}
    assert [str(s) for s in infer_inputs(targets["CrossAttention"], DIMS)] == ["x=B,T,C", "context=B,S,C"]
    assert [str(s) for s in infer_inputs(targets["Embed"], DIMS)] == ["idx=B,T:long"]
    assert [str(s) for s in infer_inputs(targets["Masked"], DIMS)] == ["x=B,T,C", "mask=T,T:bool"]
    assert [str(s) for s in infer_inputs(targets["Fused"], DIMS)] == ["qkv=B,T,3*C", "bias=1,T"]
    assert [str(s) for s in infer_inputs(targets["Defaults"], DIMS)] == ["x=B,T,C"]


def test_infer_inputs_accepts_user_dims():
    assert [str(s) for s in infer_inputs(UnknownAxis, Dims({"Q": 29}))] == ["x=B,T,Q"]


@pytest.mark.parametrize(
    ("cls", "fragments"),
    [
        pytest.param(UnknownAxis, ["'x'", "unknown dimension 'Q'", "--dims Q=SIZE"], id="unknown-axis"),
        pytest.param(AnonymousAxis, ["'x'", "--input x=DIMS"], id="anonymous-axis"),
        pytest.param(MiddleVariadic, ["'x'", "--input x=DIMS"], id="middle-variadic"),
    ],
)
def test_infer_inputs_annotation_errors(cls, fragments):
    with pytest.raises(UsageError) as exc_info:
        infer_inputs(cls, DIMS)
    one_line(exc_info, cls.__name__, *fragments)


# infer_inputs: from names ---------------------------------------------------------------------


class ByName(nn.Module):
    def forward(self, x):
        return x


class HFStyle(nn.Module):
    def forward(self, hidden_states, encoder_hidden_states, attention_mask=None):
        return hidden_states


class Tokens(nn.Module):
    def forward(self, input_ids, targets=None):
        return input_ids


class QKV(nn.Module):
    def forward(self, query, key, value, mask=None):
        return query


class SelfKV(nn.Module):
    def forward(self, key, value):
        return key + value


class NeedsMask(nn.Module):
    def forward(self, x, mask):
        return x * mask.float().mean()


class Mystery(nn.Module):
    def forward(self, x, foo, bar):
        return x + foo * bar


class StarArgs(nn.Module):
    def forward(self, x, *args, **kwargs):
        return x


class NoForward(nn.Module):
    pass


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        pytest.param(ByName, ["x=B,T,C"], id="x"),
        pytest.param(HFStyle, ["hidden_states=B,T,C", "encoder_hidden_states=B,S,C"], id="hf-cross"),
        pytest.param(Tokens, ["input_ids=B,T:long"], id="input-ids"),
        pytest.param(QKV, ["query=B,T,C", "key=B,S,C", "value=B,S,C"], id="query-key-value"),
        pytest.param(StarArgs, ["x=B,T,C"], id="star-args-ignored"),
    ],
)
def test_infer_inputs_from_names(cls, expected):
    assert [str(s) for s in infer_inputs(cls, DIMS)] == expected


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(ByName.forward, ["x=B,T,C"], id="unbound-forward"),
        pytest.param(ByName().forward, ["x=B,T,C"], id="bound-forward"),
        pytest.param(ByName(), ["x=B,T,C"], id="module-instance"),
    ],
)
def test_infer_inputs_accepts_forward_or_instance(target, expected):
    assert [str(s) for s in infer_inputs(target, DIMS)] == expected


@pytest.mark.parametrize(
    ("cls", "fragments"),
    [
        pytest.param(NeedsMask, ["input 'mask' of NeedsMask", "--input x=B,T,C --input mask=T,T:bool"],
                     id="required-mask"),
        pytest.param(Mystery, ["inputs 'foo', 'bar' of Mystery", "--input foo=... --input bar=..."],
                     id="unknown-names"),
        pytest.param(SelfKV, ["'key', 'value'"], id="key-without-query"),
    ],
)
def test_infer_inputs_name_errors(cls, fragments):
    with pytest.raises(UsageError) as exc_info:
        infer_inputs(cls, DIMS)
    one_line(exc_info, "cannot infer forward input", "in forward's order", *fragments)


def test_infer_inputs_without_forward():
    with pytest.raises(TargetError) as exc_info:
        infer_inputs(NoForward, DIMS)
    one_line(exc_info, "NoForward defines no forward() method")


def test_inferred_inputs_make_tensors():
    tensors = [make_input(s, DIMS) for s in infer_inputs(HFStyle, DIMS)]
    assert [tuple(t.shape) for t in tensors] == [(5, 7, 143), (5, 17, 143)]


# infer_init -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "MultiHeadAttention",
            {"d_in": 143, "d_out": 143, "context_length": 23, "dropout": 0.0, "num_heads": 11,
             "qkv_bias": False},
            id="raschka",
        ),
        pytest.param(
            "CausalSelfAttention",
            {"n_embd": 143, "n_head": 11, "block_size": 23, "dropout": 0.0},
            id="nanogpt",
        ),
        pytest.param("Head", {"head_size": 13, "n_embd": 143, "block_size": 23}, id="karpathy-head"),
        pytest.param("Outer", {}, id="no-arguments"),
    ],
)
def test_infer_init_seed_classes(name, expected):
    cls = student(name)
    init = infer_init(cls, DIMS)
    assert init == expected
    cls(**init)  # builds


def test_infer_init_follows_dims():
    init = infer_init(student("MultiHeadAttention"), Dims({"d": 8, "T": 31}))
    assert init["d_in"] == 88
    assert init["context_length"] >= 31


class Everything(nn.Module):
    def __init__(self, embed_dim, nhead, d_k, max_seq_len, n_vocab, attn_pdrop, resid_pdrop,
                 num_layers, d_ff, num_key_value_heads, bias, qkv_bias, causal=True,
                 norm_first=False, eps=1e-5, dropout_rate=0.5, use_dropout=True, *args, **kwargs):
        super().__init__()


class KVDefault(nn.Module):
    def __init__(self, dim, heads, kv_heads=1, hidden_dim=None, head_dim=None):
        super().__init__()


class Unknown(nn.Module):
    def __init__(self, d_model, foo, bar=3):
        super().__init__()
        self.foo, self.bar = foo, bar  # read: an argument never read would be None


class TwoUnknown(nn.Module):
    def __init__(self, foo, baz):
        super().__init__()
        self.foo, self.baz = foo, baz


class ConfigStyle(nn.Module):
    """A config whose one field read says nothing of its value (a kept config with no field
    read, or fields all read as sizes, is made: see test_module_config)."""

    def __init__(self, cfg):
        super().__init__()
        self.mode = cfg.mode


def test_infer_init_names_and_defaults():
    assert infer_init(Everything, DIMS) == {
        "embed_dim": 143, "nhead": 11, "d_k": 13, "max_seq_len": 23, "n_vocab": 19,
        "attn_pdrop": 0.0, "resid_pdrop": 0.0, "num_layers": 2, "d_ff": 572,
        "num_key_value_heads": 11, "bias": True, "qkv_bias": False, "causal": True,
        "norm_first": False, "eps": 1e-5, "dropout_rate": 0.0, "use_dropout": True,
    }


def test_infer_init_keeps_kv_heads_default():
    assert infer_init(KVDefault, DIMS) == {"dim": 143, "heads": 11, "kv_heads": 1,
                                          "hidden_dim": 572, "head_dim": 13}


def test_infer_init_given_values_win_and_resolve():
    init = infer_init(student("MultiHeadAttention"), DIMS,
                      given={"context_length": 16, "d_out": "C", "qkv_bias": True})
    assert init == {"d_in": 143, "d_out": 143, "context_length": 16, "dropout": 0.0,
                    "num_heads": 11, "qkv_bias": True}


def test_infer_init_given_fills_what_cannot_be_inferred():
    assert infer_init(Unknown, DIMS, given={"foo": "gelu"}) == {"d_model": 143, "foo": "gelu", "bar": 3}


def test_infer_init_passes_extra_keys_to_kwargs():
    assert infer_init(Everything, DIMS, given={"extra": 1})["extra"] == 1


@pytest.mark.parametrize(
    ("cls", "given", "error", "fragments"),
    [
        pytest.param(Unknown, None, TargetError,
                     ["cannot infer constructor argument 'foo' of Unknown: pass --init foo=VALUE"],
                     id="unknown-argument"),
        pytest.param(TwoUnknown, None, TargetError,
                     ["arguments 'foo', 'baz' of TwoUnknown", "--init foo=VALUE,baz=VALUE"],
                     id="two-unknown-arguments"),
        pytest.param(ConfigStyle, None, TargetError,
                     ["'cfg' of ConfigStyle", "config object", "--init"], id="config-object"),
        pytest.param(Unknown, {"fooo": 1}, UsageError,
                     ["Unknown() has no argument 'fooo'", "did you mean 'foo'?"], id="misspelt-init"),
        pytest.param(Unknown, {"zzz": 1}, UsageError,
                     ["no argument 'zzz'", "it takes bar, d_model, foo"], id="unknown-init"),
    ],
)
def test_infer_init_errors(cls, given, error, fragments):
    with pytest.raises(error) as exc_info:
        infer_init(cls, DIMS, given=given)
    one_line(exc_info, *fragments)


def test_infer_init_builds_config_dataclass():
    targets = {t.cls.__name__: t.cls for t in resolve_targets(str(DATA / "config_style.py"))}
    for name in ("CausalSelfAttention", "Annotated"):
        config = infer_init(targets[name], DIMS)["config"]
        assert (config.n_embd, config.n_head, config.block_size, config.vocab_size) == (143, 11, 23, 19)
        assert (config.dropout, config.n_layer, config.bias) == (0.0, 2, True)
