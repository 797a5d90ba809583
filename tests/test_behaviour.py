"""Behaviour checks: causal-leak, batch-leak and nondeterministic-eval, found by re-running."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import behaviour_models as bm
import shapetrace
from shapetrace.behaviour import (
    RTOL,
    InputRole,
    InternalCheckError,
    check_behaviour,
    dependencies,
    grid_text,
    infer_roles,
    looks_causal,
    run_behaviour,
)
from shapetrace.behaviour import locate as behaviour_locate
from shapetrace.behaviour import probe as behaviour_probe
from shapetrace.base.dims import Dims

MODELS_FILE = Path(bm.__file__)
D = Dims()
D8 = Dims({"d": 8})  # rotary embeddings need an even head size


def located_line(case: str, mark: str = "located") -> int:
    """The line of behaviour_models.py marked ``# located: <case>`` (where the wrong value
    takes effect) or, with ``mark="made"``, ``# made: <case>`` (the line that made it)."""
    for number, text in enumerate(MODELS_FILE.read_text().splitlines(), start=1):
        if re.search(rf"# {mark}: {re.escape(case)}$", text):
            return number
    raise LookupError(case)


def made_line(case: str) -> int | None:
    try:
        return located_line(case, "made")
    except LookupError:
        return None


def x_of(dims: Dims) -> torch.Tensor:
    return torch.randn(dims["B"], dims["T"], dims["C"])


def idx_of(dims: Dims) -> torch.Tensor:
    return torch.randint(0, dims["V"], (dims["B"], dims["T"]))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# --------------------------------------------------------------------------------------------
# Buggy modules: each is caught, by the right rule, at the right line
# --------------------------------------------------------------------------------------------

BUGS = [
    pytest.param(lambda d: bm.UnassignedMask(d["C"], d["H"], d["L"]), True, "causal-leak", "F.softmax",
                 id="unassigned-masked-fill"),
    pytest.param(lambda d: bm.TinyFill(d["C"], d["H"]), True, "causal-leak", "@", id="fill-minus-1e-9"),
    pytest.param(lambda d: bm.MeanOverTime(d["C"], d["H"]), True, "causal-leak", "Tensor.mean",
                 id="mean-over-time"),
    pytest.param(lambda d: bm.LayerNormOverTime(d["C"], d["H"]), True, "causal-leak", "F.layer_norm",
                 id="layer-norm-over-time"),
    pytest.param(lambda d: bm.InvertedSDPAMask(d["C"], d["H"]), True, "causal-leak",
                 "F.scaled_dot_product_attention", id="sdpa-inverted-mask"),
    pytest.param(lambda d: bm.SoftmaxOverBatch(d["C"], d["H"]), False, "batch-leak", "F.softmax",
                 id="softmax-over-batch"),
    pytest.param(lambda d: bm.MHAWithoutBatchFirst(d["C"], d["H"]), None, "batch-leak",
                 "F.multi_head_attention_forward", id="mha-without-batch-first"),
    pytest.param(lambda d: bm.PositionsFromBatch(d["C"], d["H"], d["L"]), True, "batch-leak", "torch.arange",
                 id="positions-from-batch"),
    pytest.param(lambda d: bm.TutorialPositionsOnBatchFirst(d["C"], d["H"], d["L"]), True, "batch-leak",
                 "[]", id="tutorial-positions-on-batch-first"),
    pytest.param(lambda d: bm.DropoutInEval(d["C"], d["H"]), True, "nondeterministic-eval", "F.dropout",
                 id="dropout-in-eval"),
]


@pytest.mark.parametrize(("build", "causal", "rule", "op"), BUGS)
def test_bug_is_caught_at_its_line(request, build, causal, rule, op):
    case = request.node.callspec.id
    result = run_behaviour(build(D), [x_of(D)], causal=causal, dims=D)
    assert [d.rule for d in result.diagnostics] == [rule]
    diag = result.diagnostics[0]
    assert diag.severity == "error"
    made = made_line(case)
    if made is None:
        assert diag.line == located_line(case) and diag.used_at is None
    else:  # placed at the line that made the value, with the op that used it beside it
        assert diag.line == made
        assert diag.used_at is not None and diag.used_at[1] == located_line(case)
        assert diag.to_json()["used_at"]["line"] == located_line(case)
    assert diag.file is not None and Path(diag.file).name == "behaviour_models.py"
    assert not Path(diag.file).is_absolute()  # relative to the working directory
    assert diag.op == op
    assert diag.hint
    assert diag.code  # filled in from the registry
    json.dumps(diag.to_json())


def test_unassigned_mask_hint_points_at_the_dropped_masked_fill():
    diag = check_behaviour(bm.UnassignedMask(D["C"], D["H"], D["L"]), [x_of(D)], causal=True, dims=D)[0]
    assert "never used" in diag.hint and "masked_fill" in diag.hint
    assert f"behaviour_models.py:{located_line('unassigned-masked-fill') - 1}" in diag.hint


def test_tiny_fill_hint_names_the_fill_value():
    diag = check_behaviour(bm.TinyFill(D["C"], D["H"]), [x_of(D)], causal=True, dims=D)[0]
    assert "-1e-09" in diag.hint


def test_inverted_sdpa_mask_hint_explains_polarity():
    diag = check_behaviour(bm.InvertedSDPAMask(D["C"], D["H"]), [x_of(D)], causal=True, dims=D)[0]
    assert "True where a query MAY attend" in diag.hint


def test_mha_without_batch_first_hint_and_module_path():
    diag = check_behaviour(bm.MHAWithoutBatchFirst(D["C"], D["H"]), [x_of(D)], causal=None, dims=D)[0]
    assert "batch_first=True" in diag.hint
    assert diag.module == "MHAWithoutBatchFirst.mha"
    # the line that built it without batch_first, used at the call
    source = Path(bm.__file__).read_text().splitlines()
    assert "self.mha = nn.MultiheadAttention(embed_dim, num_heads)" in source[diag.line - 1]
    assert diag.used_at is not None and "located: mha-without-batch-first" in source[diag.used_at[1] - 1]


def test_encoder_layer_without_batch_first_is_located_at_the_layer_built():
    diag = check_behaviour(bm.EncoderLayerWithoutBatchFirst(D["C"], D["H"]), [x_of(D)], causal=None,
                           dims=D)[0]
    assert diag.rule == "batch-leak"
    source = Path(bm.__file__).read_text().splitlines()
    assert "made: encoder-without-batch-first" in source[diag.line - 1]
    assert diag.used_at is not None and "located: encoder-without-batch-first" in source[diag.used_at[1] - 1]


def test_a_wrong_mask_handed_to_mha_is_located_where_it_was_made():
    import shapetrace as st

    (diag,) = [d for d in st.check(bm.PaddedLookAhead, causal=True).targets[0].diagnostics
               if d.rule == "causal-leak"]
    source = Path(bm.__file__).read_text().splitlines()
    assert "made: padded-look-ahead" in source[diag.line - 1]
    assert diag.used_at is not None and "located: padded-look-ahead" in source[diag.used_at[1] - 1]


def test_mean_over_time_message_names_the_axis():
    diag = check_behaviour(bm.MeanOverTime(D["C"], D["H"]), [x_of(D)], causal=True, dims=D)[0]
    assert "dim=1, axis T" in diag.message
    assert "x.mean(dim=1, keepdim=True)" in diag.message


def test_softmax_over_batch_message_names_the_batch():
    diag = check_behaviour(bm.SoftmaxOverBatch(D["C"], D["H"]), [x_of(D)], causal=False, dims=D)[0]
    assert "(B)" in diag.message and "dim=0, axis B" in diag.message


# --------------------------------------------------------------------------------------------
# Correct modules: quiet
# --------------------------------------------------------------------------------------------


def _gpt2(d: Dims):
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_embd=d["C"], n_layer=1, n_head=d["H"], vocab_size=d["V"], n_positions=d["L"],
                        bos_token_id=0, eos_token_id=0)
    return GPT2Model(config)


def _bert(d: Dims):
    from transformers import BertConfig, BertModel

    config = BertConfig(hidden_size=d["C"], num_hidden_layers=1, num_attention_heads=d["H"],
                        intermediate_size=2 * d["C"], vocab_size=d["V"], max_position_embeddings=d["L"])
    return BertModel(config)


D_LLAMA = Dims({"H": 6, "d": 8})  # GQA: 6 query heads share 3 key/value heads; rotary: d even


def _llama(d: Dims):
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(hidden_size=d["C"], num_hidden_layers=1, num_attention_heads=d["H"],
                         num_key_value_heads=d["H"] // 2, head_dim=d["d"], intermediate_size=2 * d["C"],
                         vocab_size=d["V"], max_position_embeddings=d["L"], bos_token_id=0, eos_token_id=0)
    return LlamaModel(config)


D_GQA = Dims({"H": 6})

CORRECT = [
    # (build, inputs, causal, dims)
    pytest.param(lambda d: bm.CausalSelfAttention(d["C"], d["H"], d["L"]), "x", True, D, id="fused-qkv"),
    pytest.param(lambda d: bm.SeparateProjections(d["C"], d["H"]), "x", True, D, id="separate-projections"),
    pytest.param(lambda d: bm.SeparateProjections(d["C"], d["H"], causal=False), "x", False, D,
                 id="separate-projections-bidirectional"),
    pytest.param(lambda d: bm.EinsumAttention(d["C"], d["H"]), "x", True, D, id="einsum"),
    pytest.param(lambda d: bm.EinsumAttention(d["C"], d["H"], causal=False), "x", False, D,
                 id="einsum-bidirectional"),
    pytest.param(lambda d: bm.SDPAAttention(d["C"], d["H"]), "x", True, D, id="sdpa-is-causal"),
    pytest.param(lambda d: bm.SDPAAttention(d["C"], d["H"], causal=False), "x", False, D,
                 id="sdpa-bidirectional"),
    pytest.param(lambda d: bm.GroupedQueryAttention(d["C"], d["H"], 3), "x", True, D_GQA, id="gqa"),
    pytest.param(lambda d: bm.GroupedQueryAttention(d["C"], d["H"], 1, expand=True), "x", True, D, id="mqa"),
    pytest.param(lambda d: bm.ALiBiAttention(d["C"], d["H"]), "x", True, D, id="alibi"),
    pytest.param(lambda d: bm.RotaryAttention(d["C"], d["H"], d["L"]), "x", True, D8, id="rotary"),
    pytest.param(lambda d: bm.CrossAttentionBlock(d["C"], d["H"]), "x,context", True, D,
                 id="cross-attention"),
    pytest.param(lambda d: bm.PreNormBlock(d["C"], d["H"], d["L"]), "x", True, D, id="pre-norm-block"),
    pytest.param(lambda d: bm.BatchFirstMHA(d["C"], d["H"]), "x", True, D, id="mha-batch-first"),
    pytest.param(lambda d: bm.BatchFirstMHA(d["C"], d["H"], causal=False), "x", False, D,
                 id="mha-batch-first-bidirectional"),
    pytest.param(lambda d: bm.SeqFirstMHAWrapper(d["C"], d["H"]), "x", True, D, id="mha-seq-first-wrapper"),
    pytest.param(lambda d: bm.MHAWithWeights(d["C"], d["H"]), "x", True, D, id="mha-tuple-output"),
    pytest.param(lambda d: bm.TinyGPT(d["V"], d["C"], d["H"], d["L"]), "idx", True, D,
                 id="tokens-dict-output"),
    pytest.param(lambda d: bm.IndexedEmbeddingLM(d["V"], d["C"], d["H"]), "idx", True, D,
                 id="tokens-without-nn-embedding"),
    pytest.param(lambda d: bm.Encoder(d["C"], d["H"]), "x,padding", False, D, id="encoder-padding-mask"),
    pytest.param(lambda d: bm.ScalesInputInPlace(d["C"], d["H"]), "x", True, D, id="in-place-on-input"),
    pytest.param(_gpt2, "idx", True, D, id="hf-gpt2"),
    pytest.param(_bert, "idx", False, D, id="hf-bert"),
    pytest.param(_llama, "idx", True, D_LLAMA, id="hf-llama-gqa-rotary"),
]


def _inputs(spec: str, d: Dims) -> list[torch.Tensor]:
    out = []
    for name in spec.split(","):
        if name == "x":
            out.append(x_of(d))
        elif name == "idx":
            out.append(idx_of(d))
        elif name == "context":
            out.append(torch.randn(d["B"], d["S"], d["C"]))
        elif name == "padding":
            padding = torch.zeros(d["B"], d["T"], dtype=torch.bool)
            padding[0, -2:] = True  # the last two tokens of sample 0 are padding
            out.append(padding)
    return out


@pytest.mark.parametrize(("build", "spec", "causal", "dims"), CORRECT)
def test_correct_module_is_quiet(build, spec, causal, dims):
    module = build(dims)
    result = run_behaviour(module, _inputs(spec, dims), causal=causal, dims=dims)
    assert result.diagnostics == []
    assert result.skipped == []
    dep = result.dependency
    assert dep is not None and dep.pairs
    assert dep.batch_leaks() == []
    if causal:
        assert dep.causal_leaks() == [] and looks_causal(dep)
    else:
        assert dep.causal_leaks() and not looks_causal(dep)


def test_last_position_logits_are_quiet():
    module = bm.LastTokenLM(D["V"], D["C"], D["H"], D["L"])
    result = run_behaviour(module, [idx_of(D)], causal=True, dims=D)
    assert result.diagnostics == [] and result.skipped == []
    assert result.dependency.time_grid is None  # (B, 1, V): nothing to draw


def test_causal_leak_behind_last_position_logits_is_found_inside():
    module = bm.LastTokenLM(D["V"], D["C"], D["H"], D["L"], leaky=True)
    diags = check_behaviour(module, [idx_of(D)], causal=True, dims=D)
    assert [d.rule for d in diags] == ["causal-leak"]
    assert diags[0].line == made_line("unassigned-masked-fill")
    assert diags[0].used_at[1] == located_line("unassigned-masked-fill")
    assert "no output has a time axis" in diags[0].message
    assert diags[0].data["grid"]["expected"] == "lower" and diags[0].data["leaks"] > 0


def test_causal_intent_unknown_gives_a_note_not_a_finding():
    result = run_behaviour(bm.CausalSelfAttention(D["C"], D["H"], D["L"]), [x_of(D)], causal=None, dims=D)
    assert result.diagnostics == []
    assert any("causal in practice" in n for n in result.notes)


def test_causal_intent_unknown_skips_the_causal_check():
    result = run_behaviour(bm.TinyFill(D["C"], D["H"]), [x_of(D)], causal=None, dims=D)
    assert result.diagnostics == []
    assert result.dependency.causal_leaks()  # still visible in the dependency pattern


def test_bidirectional_model_declared_causal_leaks():
    diags = check_behaviour(_bert(D), [idx_of(D)], causal=True, dims=D)
    assert [d.rule for d in diags] == ["causal-leak"]
    assert diags[0].data["leaks"] == D["T"] * (D["T"] - 1) // 2


def test_cross_attention_context_is_not_time_aligned():
    inputs = _inputs("x,context", D)
    roles = infer_roles(inputs, D, names=["x", "context"])
    dep = dependencies(bm.CrossAttentionBlock(D["C"], D["H"]), inputs, roles, dims=D)
    context = [p for p in dep.pairs if p.source == "context"]
    assert context and all(p.time is None for p in context)
    assert context[0].time_strength is not None and context[0].time_strength.shape == (D["T"], D["S"])
    assert bool((context[0].time_strength > RTOL).all())  # every position sees the whole context


def test_leak_in_the_query_stream_of_a_cross_attention_is_caught():
    inputs = _inputs("x,context", D)
    roles = infer_roles(inputs, D, names=["x", "context"])
    module = bm.CrossAttentionCausalContext(D["C"], D["H"])
    diags = check_behaviour(module, inputs, roles, causal=True, dims=D)
    assert [d.rule for d in diags] == ["causal-leak"]
    assert "`x`" in diags[0].message and "context" not in diags[0].message
    assert diags[0].op == "F.scaled_dot_product_attention"


def test_seq_first_input_with_explicit_roles():
    d = D
    x = torch.randn(d["T"], d["B"], d["C"])
    roles = [InputRole.from_axes("x", "T B C")]
    result = run_behaviour(bm.SeqFirstEncoder(d["C"], d["H"], d["L"]), [x], roles, causal=True, dims=d)
    assert result.diagnostics == [] and result.skipped == []
    assert looks_causal(result.dependency)


def test_position_wise_module_is_not_causal_in_practice():
    dep = dependencies(nn.Sequential(nn.Linear(D["C"], D["C"]), nn.GELU()), [x_of(D)], dims=D)
    assert dep.causal_leaks() == [] and not looks_causal(dep)
    assert bool(dep.time_grid.equal(torch.eye(D["T"], dtype=torch.bool)))


# --------------------------------------------------------------------------------------------
# The dependency computation itself
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("batched", [pytest.param(True, id="vmap-batched"),
                                     pytest.param(False, id="row-loop")])
@pytest.mark.parametrize(("build", "future"), [
    pytest.param(lambda d: bm.CausalSelfAttention(d["C"], d["H"], d["L"]), False, id="causal"),
    pytest.param(lambda d: bm.TinyFill(d["C"], d["H"]), True, id="tiny-fill"),
    pytest.param(lambda d: bm.SoftmaxOverBatch(d["C"], d["H"]), True, id="softmax-over-batch"),
])
def test_batched_and_looped_backward_agree(build, future, batched):
    module = build(D)
    x = x_of(D)
    dep = dependencies(module, [x], dims=D, batched=batched)
    expected = dependencies(module, [x], dims=D, batched=not batched)
    assert torch.equal(dep.batch_grid, expected.batch_grid)
    assert torch.equal(dep.time_grid, expected.time_grid)
    assert bool(dep.time_grid.triu(1).any()) == future or bool(dep.batch_leaks())


@pytest.mark.parametrize("fill", [
    pytest.param("-1e4", id="minus-1e4"), pytest.param("finfo-min", id="finfo-min"),
    pytest.param("-inf", id="minus-inf"),
])
def test_large_negative_fills_count_as_masked_exactly(fill, monkeypatch):
    class Fill(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.qkv = nn.Linear(c, 3 * c)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            scores = q @ k.transpose(-2, -1)
            T = x.shape[1]
            value = {"-1e4": -1e4, "finfo-min": torch.finfo(scores.dtype).min, "-inf": float("-inf")}[fill]
            future = torch.ones(T, T, dtype=torch.bool).triu(1)
            return scores.masked_fill(future, value).softmax(-1) @ v

    dep = dependencies(Fill(D["C"]), [x_of(D)], dims=D)
    strength = dep.pairs[0].time_strength
    past = torch.ones_like(strength, dtype=torch.bool).tril()
    assert float(strength[~past].max()) == 0.0  # exactly: the weights underflow to 0.0
    assert float(strength[past].min()) > 1e-4


def test_a_tiny_fill_is_far_above_the_threshold():
    dep = dependencies(bm.TinyFill(D["C"], D["H"]), [x_of(D)], dims=D)
    future = dep.pairs[0].time_strength.triu(1)
    assert float(future[future > 0].min()) > 1e3 * RTOL


def test_several_outputs_are_all_checked():
    dep = dependencies(bm.MHAWithWeights(D["C"], D["H"]), [x_of(D)], dims=D)
    assert {p.output for p in dep.pairs} == {"output[0]", "output[1]"}
    dep = dependencies(bm.TinyGPT(D["V"], D["C"], D["H"], D["L"]), [idx_of(D)], dims=D)
    assert {p.output for p in dep.pairs} == {"logits", "hidden"}
    assert {p.source for p in dep.pairs} == {"idx (via wte)"}  # wpe is indexed by arange: not an input


def test_hf_outputs_keep_their_field_names():
    dep = dependencies(_bert(D), [idx_of(D)], dims=D)
    outputs = {p.output for p in dep.pairs}
    assert outputs == {"last_hidden_state", "pooler_output"}
    pooled = next(p for p in dep.pairs if p.output == "pooler_output")
    assert pooled.time_strength is None  # no time axis: only the batch grid


# --------------------------------------------------------------------------------------------
# Robustness: the user's module, errors, collisions
# --------------------------------------------------------------------------------------------


def test_the_users_module_and_rng_are_untouched():
    module = bm.DropoutInEval(D["C"], D["H"]).train()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    x = x_of(D)
    rng = torch.get_rng_state()
    threads = torch.get_num_threads()
    run_behaviour(module, [x], causal=True, dims=D)
    assert module.training
    assert all(p.dtype == torch.float32 and p.requires_grad for p in module.parameters())
    assert all(torch.equal(before[k], v) for k, v in module.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.get_num_threads() == threads
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in module.modules())


def test_the_callers_inputs_are_untouched():
    x = x_of(D).double()
    kept = x.clone()
    assert check_behaviour(bm.ScalesInputInPlace(D["C"], D["H"]), [x], causal=True, dims=D) == []
    assert torch.equal(x, kept)


def test_keyword_tensors_with_a_batch_axis_follow_the_batch():
    x, padding = _inputs("x,padding", D)
    result = run_behaviour(bm.Encoder(D["C"], D["H"]), [x], causal=False, dims=D, kwargs={"padding": padding})
    assert result.diagnostics == [] and result.skipped == []


def test_a_module_that_raises_gives_no_diagnostics():
    result = run_behaviour(bm.RaisesInForward(D["C"]), [x_of(D)], causal=True, dims=D)
    assert result.diagnostics == []
    assert len(result.skipped) == 1 and "raised" in result.skipped[0]


def test_a_module_that_raises_only_on_the_second_run_is_the_modules_failure():
    result = run_behaviour(bm.RaisesOnSecondCall(D["C"]), [x_of(D)], causal=True, dims=D)
    assert result.diagnostics == []
    assert len(result.skipped) == 1 and "the module raised while re-running" in result.skipped[0]
    assert "the cache was already consumed" in result.skipped[0]


def test_check_reports_a_module_failing_on_rerun_as_the_modules():
    report = shapetrace.check(bm.RaisesOnSecondCall, init={"d_model": "C"}, inputs=["x=B,T,C"])
    notes = report.targets[0].notes
    assert any("the module raised while re-running" in n for n in notes)
    assert not any("internal error" in n for n in notes)


def _break_reduce_grad(monkeypatch):
    """A bug in the checks' own code: a helper that is not callable any more."""
    monkeypatch.setattr(behaviour_probe, "reduce_grad", None)


def test_a_bug_in_the_checks_is_an_internal_error_not_the_modules(monkeypatch):
    _break_reduce_grad(monkeypatch)
    with pytest.raises(InternalCheckError) as info:
        run_behaviour(bm.CausalSelfAttention(D["C"], D["H"], D["L"]), [x_of(D)], causal=True, dims=D)
    assert info.value.check == "batch-leak and causal-leak"
    assert isinstance(info.value.error, TypeError)
    assert "please report it" in str(info.value)


def test_a_bug_in_a_callback_inside_the_users_forward_is_an_internal_error(monkeypatch):
    # The observer runs inside the user's forward (user frame -> tracer -> observer): the
    # exception passes through the user's code but was raised by shapetrace's.
    monkeypatch.setattr(behaviour_locate, "snapshot", None)
    with pytest.raises(InternalCheckError) as info:
        run_behaviour(bm.UnassignedMask(D["C"], D["H"], D["L"]), [x_of(D)], causal=True, dims=D)
    assert info.value.check == "causal-leak"


def test_check_reports_an_internal_error_without_blaming_the_module(monkeypatch):
    _break_reduce_grad(monkeypatch)
    report = shapetrace.check(bm.CausalSelfAttention, init={"n_embd": "C", "n_head": "H",
                                                            "block_size": "L"}, inputs=["x=B,T,C"])
    notes = report.targets[0].notes
    assert report.targets[0].error is None
    assert any(n.startswith("batch-leak and causal-leak not checked: internal error in "
                            "shapetrace's batch-leak and causal-leak check")
               and "please report it" in n for n in notes)
    assert not any("the module raised" in n for n in notes)


def test_equal_batch_and_time_sizes_cannot_be_told_apart():
    dims = Dims({"B": 7})
    result = run_behaviour(bm.UnassignedMask(dims["C"], dims["H"], dims["L"]), [x_of(dims)], causal=True,
                           dims=dims)
    assert result.diagnostics == []
    assert any("cannot be told apart" in s for s in result.skipped)
    assert dependencies(bm.UnassignedMask(dims["C"], dims["H"], dims["L"]), [x_of(dims)],
                        dims=dims).reason is not None


def test_determinism_is_still_checked_when_b_equals_t():
    dims = Dims({"B": 7})
    diags = check_behaviour(bm.DropoutInEval(dims["C"], dims["H"]), [x_of(dims)], causal=True, dims=dims)
    assert [d.rule for d in diags] == ["nondeterministic-eval"]


def test_dropout_built_with_rate_zero_is_still_located_at_its_line():
    diags = check_behaviour(bm.DropoutInEval(D["C"], D["H"], dropout=0.0), [x_of(D)], causal=True, dims=D)
    assert [d.rule for d in diags] == ["nondeterministic-eval"]
    assert diags[0].line == located_line("dropout-in-eval") and diags[0].op == "F.dropout"


class HeadsMergedIntoBatchSoftmaxOverThem(nn.Module):
    """Heads folded into the batch head-major, (H*B, T, d), and a softmax over that first axis:
    the samples mix there, where no batch axis of its own shows it; the view that unfolds them
    after is where the mixing is seen."""

    def __init__(self, C, H):
        super().__init__()
        self.h, self.d = H, C // H
        self.qkv = nn.Linear(C, 3 * C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.h, self.d).permute(2, 0, 1, 3).reshape(self.h * B, T, self.d)
                   for t in self.qkv(x).chunk(3, dim=-1))
        weights = torch.softmax(q @ k.transpose(1, 2), dim=0)  # the line to report
        out = (weights @ v).view(self.h, B, T, self.d)
        return out.permute(1, 2, 0, 3).reshape(B, T, C)


def test_samples_mixed_inside_a_merged_batch_are_found_where_they_were_mixed():
    diags = check_behaviour(HeadsMergedIntoBatchSoftmaxOverThem(D["C"], D["H"]), [x_of(D)],
                            causal=False, dims=D)
    (leak,) = [d for d in diags if d.rule == "batch-leak"]
    assert leak.op == "torch.softmax", leak


class ZeroStartThenDropout(nn.Module):
    """A start state made with ``x.new(B, n).zero_()`` (memory never written, then zeroed) ahead
    of a dropout left on in eval: the dropout is the first op whose values differ."""

    def __init__(self, C):
        super().__init__()
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        start = x.new(x.shape[0], 1, x.shape[-1]).zero_()
        h = torch.cat([start, x], dim=1)
        return nn.functional.dropout(self.proj(h), p=0.5)[:, 1:]  # the line to report


def test_memory_a_forward_zeroes_is_not_where_runs_first_differ():
    diags = check_behaviour(ZeroStartThenDropout(D["C"]), [x_of(D)], causal=False, dims=D)
    assert [d.rule for d in diags] == ["nondeterministic-eval"]
    assert diags[0].op == "F.dropout", diags[0]


def test_dropout_modules_are_checked_in_eval_mode():
    module = bm.PreNormBlock(D["C"], D["H"], D["L"], dropout=0.5).train()
    assert check_behaviour(module, [x_of(D)], causal=True, dims=D) == []


# --------------------------------------------------------------------------------------------
# Roles and rendering data
# --------------------------------------------------------------------------------------------


def test_roles_from_axes_and_sizes():
    assert InputRole.from_axes("x", "B T C") == InputRole("x", 0, 1, "query", False)
    assert InputRole.from_axes("context", "B,S,C") == InputRole("context", 0, 1, "context", False)
    assert InputRole.from_axes("idx", ["B", "T"], tokens=True).tokens
    assert InputRole.from_axes("mask", "T T").batch is None
    roles = infer_roles([x_of(D), torch.randn(D["B"], D["S"], D["C"]), idx_of(D),
                         torch.ones(D["T"], D["T"], dtype=torch.bool), 3], D)
    assert [(r.batch, r.time, r.stream, r.tokens) for r in roles[:3]] == [
        (0, 1, "query", False), (0, 1, "context", False), (0, 1, "query", True)]
    assert roles[3].is_constant and roles[4] is None


def test_causal_grid_data_and_text():
    diag = check_behaviour(bm.UnassignedMask(D["C"], D["H"], D["L"]), [x_of(D)], causal=True, dims=D)[0]
    grid = diag.data["grid"]
    T = D["T"]
    assert grid["expected"] == "lower" and len(grid["rows"]) == T and len(grid["cells"]) == T
    assert all(len(row) == T for row in grid["cells"])
    assert grid["cells"][0][1] == 2 and grid["cells"][1][0] == 1 and grid["cells"][3][3] == 1
    assert diag.data["leaks"] == T * (T - 1) // 2
    text = grid_text(diag.data)
    lines = text.splitlines()
    assert len(lines) == T + 3
    assert lines[2].split() == ["0", "■"] + ["✗"] * (T - 1)
    assert lines[-2].split() == [str(T - 1)] + ["■"] * T


def test_batch_grid_data():
    diag = check_behaviour(bm.MHAWithoutBatchFirst(D["C"], D["H"]), [x_of(D)], causal=None, dims=D)[0]
    grid = diag.data["grid"]
    assert diag.data["kind"] == "mixing"
    assert grid["expected"] == "diagonal" and len(grid["cells"]) == D["B"]
    assert [grid["cells"][i][i] for i in range(D["B"])] == [1] * D["B"]
    assert grid["cells"][0][1] == 2
    assert "✗" in grid_text(diag.data)


def test_position_leak_data():
    diag = check_behaviour(bm.PositionsFromBatch(D["C"], D["H"], D["L"]), [x_of(D)], causal=True, dims=D)[0]
    assert diag.data["kind"] == "position" and diag.data["max_change"] > 1e-3
    cells = diag.data["grid"]["cells"]  # no sample reads another: the grid is diagonal
    assert cells == [[int(i == j) for j in range(D["B"])] for i in range(D["B"])]


# --------------------------------------------------------------------------------------------
# Other sizes
# --------------------------------------------------------------------------------------------


@settings(max_examples=6, deadline=None)
@given(B=st.sampled_from([2, 3, 5]), T=st.sampled_from([4, 7, 9]))
def test_other_probe_sizes(B, T):
    dims = Dims({"B": B, "T": T})
    x = torch.randn(B, T, dims["C"])
    assert check_behaviour(bm.CausalSelfAttention(dims["C"], dims["H"], dims["L"]), [x], causal=True,
                           dims=dims) == []
    diags = check_behaviour(bm.UnassignedMask(dims["C"], dims["H"], dims["L"]), [x], causal=True, dims=dims)
    assert [d.rule for d in diags] == ["causal-leak"]
    assert diags[0].line == made_line("unassigned-masked-fill")


# --------------------------------------------------------------------------------------------
# What the checks assume of torch (shapetrace.base.compat)
# --------------------------------------------------------------------------------------------


def test_dropout_modules_share_the_private_base_class():
    from shapetrace.base.compat import dropout_base_class

    base = dropout_base_class()
    assert all(isinstance(m, base) and m.p == 0.25
               for m in (nn.Dropout(0.25), nn.Dropout1d(0.25), nn.Dropout2d(0.25), nn.AlphaDropout(0.25)))


def test_a_batched_backward_loads_the_module_the_checks_look_for():
    import sys

    from shapetrace.base.compat import BATCHED_GRAD_MODULE, batched_grad_loaded

    x = torch.randn(3, requires_grad=True)
    torch.autograd.grad((x * 2).sum(), x, torch.eye(1).squeeze(-1), is_grads_batched=True)
    assert BATCHED_GRAD_MODULE in sys.modules and batched_grad_loaded()


# --------------------------------------------------------------------------------------------
# Side inputs and reorderings (batch-leak)
# --------------------------------------------------------------------------------------------


def _lengths(d: Dims) -> torch.Tensor:
    return torch.tensor([7, 3, 5, 1, 6])[: d["B"]] % (d["T"] + 1)


def _padding(d: Dims) -> torch.Tensor:
    padding = torch.zeros(d["B"], d["T"], dtype=torch.bool)
    padding[0, -2:] = True
    padding[2, -4:] = True
    return padding


SIDE = [
    pytest.param(lambda d: bm.D2LValidLens(d["C"], d["H"], interleave=False), _lengths,
                 "d2l-valid-lens-repeat", id="d2l-valid-lens-repeat"),
    pytest.param(lambda d: bm.PaddingPerHead(d["C"], d["H"], tile=True), _padding, "padding-repeat",
                 id="padding-mask-repeat"),
]


@pytest.mark.parametrize(("build", "side", "case"), SIDE)
def test_side_input_spread_over_other_samples_is_caught(build, side, case):
    assert D["H"] % D["B"] == 1  # a roll by one would commute with the wrong index map here
    inputs = [x_of(D), side(D)]
    roles = infer_roles(inputs, D, names=["x", "side"])
    result = run_behaviour(build(D), inputs, roles, causal=None, dims=D)
    assert [d.rule for d in result.diagnostics] == ["batch-leak"]
    diag = result.diagnostics[0]
    assert diag.data["kind"] == "mixing" and "`side`" in diag.message
    assert diag.line == located_line(case)
    assert "repeat_interleave" in diag.hint


@pytest.mark.parametrize(("build", "side"), [
    pytest.param(lambda d: bm.D2LValidLens(d["C"], d["H"]), _lengths, id="d2l-repeat-interleave"),
    pytest.param(lambda d: bm.PaddingPerHead(d["C"], d["H"]), _padding, id="padding-repeat-interleave"),
])
def test_side_input_used_per_sample_is_quiet(build, side):
    inputs = [x_of(D), side(D)]
    roles = infer_roles(inputs, D, names=["x", "side"])
    result = run_behaviour(build(D), inputs, roles, causal=None, dims=D)
    assert result.diagnostics == [] and result.skipped == []
    side_pairs = [p for p in result.dependency.pairs if p.source == "side"]
    assert side_pairs and all(bool(p.batch.equal(torch.eye(D["B"], dtype=torch.bool)) or
                                   not p.batch.any()) for p in side_pairs)


def test_d2l_repeat_bug_through_check():
    report = shapetrace.check(bm.D2LValidLens, init={"num_hiddens": "C", "num_heads": "H", "interleave": False},
                              inputs=["x=B,T,C", "valid_lens=B:long:T"])
    assert [d.rule for d in report.errors] == ["batch-leak"]
    fixed = shapetrace.check(bm.D2LValidLens, init={"num_hiddens": "C", "num_heads": "H"},
                             inputs=["x=B,T,C", "valid_lens=B:long:T"])
    assert fixed.ok and not fixed.diagnostics


def test_reorderings_are_seeded_derangements():
    from shapetrace.behaviour.shuffle import orders

    first, again = orders(5), orders(5)
    assert len(first) == 3 and all(torch.equal(a, b) for a, b in zip(first, again))
    for order in first:
        assert sorted(order.tolist()) == list(range(5)) and not (order == torch.arange(5)).any()
    shifts = [torch.arange(5).roll(k) for k in range(5)]
    assert any(all(not torch.equal(o, s) for s in shifts) for o in first)  # not only shifts


class PrenetKeepsDropout(nn.Module):
    """A decoder prenet that keeps its dropout at inference, as Tacotron's does: its call says
    training=True itself."""

    def __init__(self, C):
        super().__init__()
        self.first, self.second = nn.Linear(C, C), nn.Linear(C, C)

    def forward(self, x):
        x = nn.functional.dropout(torch.relu(self.first(x)), p=0.5, training=True)
        return nn.functional.dropout(torch.relu(self.second(x)), 0.5, True)


class PrenetDropoutByDefault(PrenetKeepsDropout):
    def forward(self, x):
        x = nn.functional.dropout(torch.relu(self.first(x)), p=0.5)
        return self.second(x)


def test_a_dropout_whose_call_asks_for_training_is_a_warning_and_the_default_an_error():
    (asked,) = check_behaviour(PrenetKeepsDropout(D["C"]), [x_of(D)], causal=False, dims=D)
    assert (asked.rule, asked.severity) == ("nondeterministic-eval", "warning"), asked
    assert "training=True itself" in asked.message and asked.op == "F.dropout"
    (default,) = check_behaviour(PrenetDropoutByDefault(D["C"]), [x_of(D)], causal=False, dims=D)
    assert (default.rule, default.severity) == ("nondeterministic-eval", "error"), default


class NoisedPerTimestep(nn.Module):
    """A diffusion forward process: noise drawn in forward (random in eval by design), scaled
    per sample by its own timestep's table entry."""

    def __init__(self, steps=50):
        super().__init__()
        self.register_buffer("kept", torch.linspace(0.99, 0.1, steps))

    def forward(self, x, t):
        noise = torch.randn_like(x)
        keep = self.kept[t].view(x.shape[0], 1, 1)
        return keep.sqrt() * x + (1 - keep).sqrt() * noise


class NoisedAndCentredOverTheBatch(NoisedPerTimestep):
    def forward(self, x, t):
        x = x - x.mean(dim=0, keepdim=True)  # the line to report
        keep = self.kept[t].view(x.shape[0], 1, 1)
        return keep.sqrt() * x + (1 - keep).sqrt() * torch.randn_like(x)


def test_noise_drawn_in_forward_is_no_batch_leak_and_a_real_one_is_still_found():
    t = torch.randint(0, 50, (D["B"],))
    diags = check_behaviour(NoisedPerTimestep(), [x_of(D), t], causal=False, dims=D)
    assert [d.rule for d in diags] == ["nondeterministic-eval"], diags
    diags = check_behaviour(NoisedAndCentredOverTheBatch(), [x_of(D), t], causal=False, dims=D)
    assert sorted(d.rule for d in diags) == ["batch-leak", "nondeterministic-eval"], diags


class _SampledOrder(nn.Module):
    """Pools the positions in an order drawn afresh each call (a sampled subset that covers
    them all): the same numbers summed in another order, equal up to rounding."""

    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        flat = x.flatten(1) * torch.logspace(-6, 6, x[0].numel(), dtype=x.dtype)  # wide range
        order = torch.randperm(flat.shape[1])
        total = flat[:, order].sum(1, keepdim=True) / 1e6  # one number per sample
        return x + self.proj(x) * total[:, :, None]


def test_a_random_draw_that_changes_only_the_rounding_is_not_nondeterminism():
    """Two eval runs 1e-16 apart (a sum taken in another order) agree: the output is a function
    of the inputs; a random draw that changes the numbers is still found."""
    diags = check_behaviour(_SampledOrder(D["C"]), [x_of(D)], causal=False, dims=D)
    assert "nondeterministic-eval" not in [d.rule for d in diags], diags
    diags = check_behaviour(bm.DropoutInEval(D["C"], D["H"]), [x_of(D)], causal=True, dims=D)
    assert [d.rule for d in diags] == ["nondeterministic-eval"]


def test_batched_row_gradients_go_in_turns_when_the_graph_is_large(monkeypatch):
    """A batched backward holds the graph once per row: a forward that saved more than the
    budget has its rows differentiated a few at a time, with the same gradients."""
    import torch

    from shapetrace.behaviour import probe
    from shapetrace.behaviour.probe import BATCHED_BYTES, SavedBytes, row_grads

    turns_taken = []
    batched = probe._batched_grads
    monkeypatch.setattr(probe, "_batched_grads",
                        lambda o, l, rows: turns_taken.append(len(rows)) or batched(o, l, rows))

    x = torch.randn(3, 5, 4, dtype=torch.float64, requires_grad=True)
    with SavedBytes() as saved:
        y = (x.softmax(-1) * x).tanh()
    assert saved.total > 0
    gen = torch.Generator().manual_seed(0)
    rows = [(0, torch.randn(y.shape, generator=gen, dtype=y.dtype)) for _ in range(7)]
    whole = row_grads([y], [x], rows, batched=True)
    turns = row_grads([y], [x], rows, batched=True, graph=BATCHED_BYTES // 2)  # two rows a turn
    single = row_grads([y], [x], rows, batched=False)
    assert turns_taken == [7, 2, 2, 2, 1]
    assert whole[0].shape == turns[0].shape == (7, 3, 5, 4)
    assert torch.allclose(whole[0], turns[0]) and torch.allclose(whole[0], single[0])
