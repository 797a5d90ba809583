"""The reference zoo: each model runs at the probe sizes, checks its annotations, and the
variants that should agree do agree."""

import inspect
from dataclasses import dataclass, field

import pytest
import torch
from beartype.roar import BeartypeCallHintViolation
from jaxtyping import TypeCheckError

import reference_models as rm

# The probe sizes of the SPEC: distinct primes, so no two axes can be confused.
B, T, H, d, S, V = 5, 7, 11, 13, 17, 19
C = H * d  # 143
BLOCK_SIZE = 23
DIM = {"B": B, "T": T, "H": H, "d": d, "C": C, "S": S, "V": V}

#: constructor argument -> value, by the conventional names every reference model uses
INIT = {"n_embd": C, "n_head": H, "head_size": d, "block_size": BLOCK_SIZE, "vocab_size": V,
        "n_layer": 2}

ANNOTATION_ERRORS = (TypeCheckError, BeartypeCallHintViolation)


def build(cls, **overrides):
    """``cls`` built from the conventional argument names, like shapetrace's CLI does."""
    params = inspect.signature(cls).parameters
    kwargs = {name: value for name, value in INIT.items() if name in params}
    kwargs.update(overrides)
    return cls(**kwargs)


def inputs(cls, dtype=torch.float32, generator=None):
    """forward's inputs at the probe sizes, by parameter name."""
    out = []
    for name in list(inspect.signature(cls.forward).parameters)[1:]:
        if name == "idx":
            out.append(torch.randint(0, V, (B, T), generator=generator))
        elif name == "context":
            out.append(torch.randn(B, S, C, dtype=dtype, generator=generator))
        else:
            out.append(torch.randn(B, T, C, dtype=dtype, generator=generator))
    return out


@dataclass(frozen=True)
class Case:
    cls: type
    out: str  # the output shape in dim names
    init: dict = field(default_factory=dict)
    causal: bool = False  # later tokens must not change earlier outputs
    has_width: bool = True  # the constructor fixes C, so a wrong width is refused


CASES = [
    pytest.param(Case(rm.AverageLoop, "B T C", causal=True, has_width=False), id="average-loop"),
    pytest.param(Case(rm.AverageMatmul, "B T C", causal=True, has_width=False), id="average-matmul"),
    pytest.param(Case(rm.AverageSoftmax, "B T C", causal=True, has_width=False), id="average-softmax"),
    pytest.param(Case(rm.SimpleSelfAttention, "B T C", has_width=False), id="simple"),
    pytest.param(Case(rm.SimpleSelfAttention, "B T C", {"causal": True}, causal=True, has_width=False),
                 id="simple-causal"),
    pytest.param(Case(rm.Head, "B T d", causal=True), id="head"),
    pytest.param(Case(rm.Head, "B T d", {"causal": False}), id="head-noncausal"),
    pytest.param(Case(rm.CausalAttention, "B T d", causal=True), id="causal-buffer"),
    pytest.param(Case(rm.MultiHeadAttentionWrapper, "B T C", causal=True), id="mha-wrapper"),
    pytest.param(Case(rm.MultiHeadAttention, "B T C", causal=True), id="mha-split"),
    pytest.param(Case(rm.FusedQKVAttention, "B T C", causal=True), id="mha-fused"),
    pytest.param(Case(rm.EinsumAttention, "B T C", causal=True), id="mha-einsum"),
    pytest.param(Case(rm.CrossAttention, "B T C"), id="cross"),
    pytest.param(Case(rm.SDPAttention, "B T C", causal=True), id="mha-sdpa"),
    pytest.param(Case(rm.FeedForward, "B T C"), id="feed-forward"),
    pytest.param(Case(rm.Block, "B T C", causal=True), id="block"),
    pytest.param(Case(rm.GPT, "B T V", causal=True, has_width=False), id="gpt"),
]

CAUSAL_CASES = [p for p in CASES if p.values[0].causal]
WIDTH_CASES = [p for p in CASES if p.values[0].has_width]


# Every model at the probe sizes ----------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_runs_at_probe_sizes(case):
    torch.manual_seed(0)
    model = build(case.cls, **case.init).eval()
    out = model(*inputs(case.cls))
    assert tuple(out.shape) == tuple(DIM[name] for name in case.out.split())
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("case", CASES)
def test_forward_is_checked_by_jaxtyping(case):
    # The checks run on every call; an unwrapped forward would pass the wrong-input tests only by
    # accident of a later matmul.
    assert hasattr(case.cls.forward, "__wrapped__")


@pytest.mark.parametrize("case", WIDTH_CASES)
def test_wrong_width_is_an_annotation_error(case):
    model = build(case.cls, **case.init)
    args = [torch.randn(*a.shape[:-1], 29) for a in inputs(case.cls)]
    with pytest.raises(ANNOTATION_ERRORS, match=r"parameter 'x'.\nActual value: f32\[5,7,29\]"):
        model(*args)


def test_cross_attention_checks_the_context_width():
    model = build(rm.CrossAttention)
    with pytest.raises(ANNOTATION_ERRORS, match="parameter 'context'"):
        model(torch.randn(B, T, C), torch.randn(B, S, 29))


@pytest.mark.parametrize("case", [p for p in CASES if not p.values[0].has_width])
def test_wrong_rank_is_an_annotation_error(case):
    model = build(case.cls, **case.init)
    wrong = [a[0] for a in inputs(case.cls)]  # the batch axis dropped
    with pytest.raises(ANNOTATION_ERRORS, match=r"Actual value: \w+\[7(,\d+)?\]"):
        model(*wrong)


def test_gpt_refuses_float_token_ids():
    with pytest.raises(ANNOTATION_ERRORS, match=r"Actual value: f32\[5,7\]"):
        build(rm.GPT)(torch.randn(B, T))


def test_gpt_refuses_sequences_longer_than_block_size():
    with pytest.raises(ValueError, match="block_size=23"):
        build(rm.GPT)(torch.zeros(B, BLOCK_SIZE + 1, dtype=torch.long))


# The three averages ------------------------------------------------------------------------------


def _running_mean(x):
    return x.cumsum(dim=1) / torch.arange(1, x.size(1) + 1, dtype=x.dtype).view(1, -1, 1)


@pytest.mark.parametrize("cls", [
    pytest.param(rm.AverageLoop, id="loop"),
    pytest.param(rm.AverageMatmul, id="matmul"),
    pytest.param(rm.AverageSoftmax, id="softmax"),
])
def test_averages_are_the_running_mean(cls):
    x = torch.randn(B, T, C, dtype=torch.float64)
    torch.testing.assert_close(cls()(x), _running_mean(x))


@pytest.mark.parametrize("cls", [
    pytest.param(rm.AverageMatmul, id="matmul"),
    pytest.param(rm.AverageSoftmax, id="softmax"),
])
def test_averages_agree_with_the_loop(cls):
    x = torch.randn(B, T, C)
    torch.testing.assert_close(cls()(x), rm.AverageLoop()(x))


# The multi-head variants compute one function ------------------------------------------------

VARIANTS = [
    pytest.param(rm.MultiHeadAttention, id="split"),
    pytest.param(rm.FusedQKVAttention, id="fused"),
    pytest.param(rm.EinsumAttention, id="einsum"),
    pytest.param(rm.SDPAttention, id="sdpa"),
]
FLAGS = [
    pytest.param(True, True, id="causal-bias"),
    pytest.param(True, False, id="causal-nobias"),
    pytest.param(False, True, id="noncausal-bias"),
    pytest.param(False, False, id="noncausal-nobias"),
]


def _wrapper(causal, bias):
    torch.manual_seed(0)
    return build(rm.MultiHeadAttentionWrapper, causal=causal, bias=bias).double()


def _torch_mha(x, mha, causal):
    mask = ~rm.causal_mask(x.size(1)) if causal else None  # torch: True = may not attend
    return mha(x, x, x, attn_mask=mask, need_weights=False)[0]


@pytest.mark.parametrize("causal,bias", FLAGS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_wrapper_with_copied_weights(variant, causal, bias):
    wrapper = _wrapper(causal, bias)
    other = build(variant, causal=causal, bias=bias).double()
    rm.copy_attention_weights(wrapper, other)
    x = torch.randn(B, T, C, dtype=torch.float64)
    torch.testing.assert_close(other(x), wrapper(x))


@pytest.mark.parametrize("causal,bias", FLAGS)
@pytest.mark.parametrize("variant", [pytest.param(rm.MultiHeadAttentionWrapper, id="wrapper"), *VARIANTS])
def test_variant_matches_torch_multihead_attention(variant, causal, bias):
    source = _wrapper(causal, bias)
    ours = build(variant, causal=causal, bias=bias).double()
    mha = torch.nn.MultiheadAttention(C, H, bias=bias, batch_first=True).double()
    rm.copy_attention_weights(source, ours)
    rm.copy_attention_weights(source, mha)
    x = torch.randn(B, T, C, dtype=torch.float64)
    torch.testing.assert_close(ours(x), _torch_mha(x, mha, causal))


@pytest.mark.parametrize("variant", [pytest.param(rm.MultiHeadAttentionWrapper, id="wrapper"), *VARIANTS])
def test_weights_copied_from_torch_come_back_unchanged(variant):
    mha = torch.nn.MultiheadAttention(C, H, bias=True, batch_first=True)
    with torch.no_grad():
        for p in mha.parameters():
            p.normal_()
    ours = build(variant, bias=True)
    rm.copy_attention_weights(mha, ours)
    back = torch.nn.MultiheadAttention(C, H, bias=True, batch_first=True)
    rm.copy_attention_weights(ours, back)
    for (name, p), q in zip(mha.named_parameters(), back.parameters()):
        torch.testing.assert_close(q, p, msg=name)


def test_copying_a_bias_into_a_model_without_one_is_refused():
    with pytest.raises(ValueError, match="bias=True"):
        rm.copy_attention_weights(_wrapper(True, True), build(rm.MultiHeadAttention, bias=False))


def test_copying_between_different_widths_is_refused():
    with pytest.raises(ValueError, match="does not fit"):
        rm.copy_attention_weights(build(rm.MultiHeadAttention), rm.MultiHeadAttention(8 * H, H, BLOCK_SIZE))


# Heads are split and merged without mixing positions ---------------------------------------------


def test_split_heads_takes_head_h_from_columns_h_times_d():
    x = torch.randn(B, T, C)
    heads = rm.split_heads(x, H)
    assert heads.shape == (B, H, T, d)
    for h in (0, 4, H - 1):
        torch.testing.assert_close(heads[:, h], x[:, :, h * d:(h + 1) * d])


def test_merge_heads_undoes_split_heads():
    x = torch.randn(B, T, C)
    torch.testing.assert_close(rm.merge_heads(rm.split_heads(x, H)), x)


def test_split_heads_checks_its_input_rank():
    with pytest.raises(ANNOTATION_ERRORS):
        rm.split_heads(torch.randn(B, H, T, d), H)


# Causality -----------------------------------------------------------------------------------


def _change_the_future(args, t0):
    changed = []
    for a in args:
        a = a.clone()
        if a.dtype == torch.long:
            a[:, t0:] = (a[:, t0:] + 1) % V
        else:
            a[:, t0:] = torch.randn_like(a[:, t0:])
        changed.append(a)
    return changed


@pytest.mark.parametrize("case", CAUSAL_CASES)
def test_causal_outputs_ignore_later_tokens(case):
    torch.manual_seed(0)
    model = build(case.cls, **case.init).eval()
    args = inputs(case.cls)
    t0 = 4
    before, after = model(*args), model(*_change_the_future(args, t0))
    torch.testing.assert_close(after[:, :t0], before[:, :t0])
    assert not torch.allclose(after[:, t0:], before[:, t0:])


@pytest.mark.parametrize("cls", [
    pytest.param(rm.SimpleSelfAttention, id="simple"),
    pytest.param(rm.Head, id="head"),
    pytest.param(rm.MultiHeadAttentionWrapper, id="mha-wrapper"),
    pytest.param(rm.MultiHeadAttention, id="mha-split"),
    pytest.param(rm.FusedQKVAttention, id="mha-fused"),
    pytest.param(rm.EinsumAttention, id="mha-einsum"),
    pytest.param(rm.SDPAttention, id="mha-sdpa"),
])
def test_noncausal_outputs_see_later_tokens(cls):
    # The causality test above has teeth: without the mask, earlier outputs do change.
    torch.manual_seed(0)
    model = build(cls, causal=False).eval()
    args = [0.1 * a for a in inputs(cls)]  # small inputs: the softmax must not saturate on x_i . x_i
    before, after = model(*args), model(*_change_the_future(args, 4))
    assert not torch.allclose(after[:, :4], before[:, :4])


def test_cross_attention_queries_are_independent():
    torch.manual_seed(0)
    model = build(rm.CrossAttention)
    x, context = inputs(rm.CrossAttention)
    x2 = x.clone()
    x2[:, 3] = torch.randn(B, C)
    before, after = model(x, context), model(x2, context)
    torch.testing.assert_close(after[:, :3], before[:, :3])
    torch.testing.assert_close(after[:, 4:], before[:, 4:])


# Eval mode is deterministic, training mode uses dropout ----------------------------------------


@pytest.mark.parametrize("case", [p for p in CASES if "dropout" in inspect.signature(p.values[0].cls).parameters])
def test_dropout_is_off_in_eval_mode(case):
    model = build(case.cls, dropout=0.5, **case.init)
    args = inputs(case.cls)
    model.eval()
    torch.testing.assert_close(model(*args), model(*args))
    model.train()
    assert not torch.equal(model(*args), model(*args))
