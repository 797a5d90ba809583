"""PyTorch's own attention modules and Hugging Face models in configurations the other HF tests
do not cover stay quiet: no error, no rule of shapetrace's own, and the behaviour checks ran.

Modules live in tests/data/builtins/: ``torch_modules.py`` (nn.MultiheadAttention with kdim/vdim,
add_bias_kv, add_zero_attn, padding and bool/float/3-D masks, per-head weights; encoder/decoder
layers with norm_first, gelu, is_causal and memory masks; nn.Transformer), ``hf_wrappers.py``
(GPT-2 with a KV cache, BERT with token_type_ids, a T5 decoder stack, Mistral with padding), and
``cli_builtins.py`` for the command line. Every model is random-init and tiny; nothing is
downloaded. Each quiet case has a reason to be trusted: a leaking twin is found, or the
attention is read.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import shapetrace as st
from shapetrace.analysis.facts import analyse
from shapetrace.base.dims import Dims

import transformers as tf  # noqa: E402 - a test extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "builtins"
STRICT = ("softmax-axis", "attention-scale", "unnormalized-attention", "silent-broadcast",
          "discarded-result", "reversed-transpose", "non-finite", "dim-collision", "head-grouping",
          "causal-leak", "batch-leak", "nondeterministic-eval", "op-failed", "input-mutated")
EVEN = {"H": 2, "d": 8}  # torch's fast path needs even heads; rotary needs an even head size


def _load(name):
    spec = importlib.util.spec_from_file_location(f"builtins_{name}", DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TM = _load("torch_modules")
HF = _load("hf_wrappers")


@pytest.fixture(autouse=True)
def _quiet_transformers():
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def show(report) -> str:
    (result,) = report.targets
    lines = [f"{d.severity} {d.rule} {d.location}: {d.message}" for d in report.diagnostics]
    return "\n".join(lines + list(result.notes) + list(result.skipped))


def assert_quiet(report, allowed=()):
    (result,) = report.targets
    assert result.error is None, result.error
    assert not report.errors, show(report)
    assert not [d for d in report.diagnostics if d.rule in STRICT and d.rule not in allowed], \
        show(report)
    # the quiet result is not for want of running: the behaviour checks did not give up
    assert not _gave_up(result), show(report)


def _gave_up(result):
    return [n for n in result.notes + result.skipped if n.startswith("behaviour checks")]


# --- torch.nn built-ins -----------------------------------------------------------------------

def _padding(batch, length, row=0, hidden=2):
    """A key padding mask (True = padding): sample ``row`` hides its last ``hidden`` keys."""
    pad = torch.zeros(batch, length, dtype=torch.bool)
    pad[row, -hidden:] = True
    return pad


def _inputs(name, s):
    B, T, S, C = s["B"], s["T"], s["S"], s["C"]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, C, generator=g)
    if name == "MHASeqFirst":
        return [x.transpose(0, 1).contiguous(), _padding(B, T)]
    if name == "MHAKdimVdim":
        return [x, torch.randn(B, S, 29, generator=g), torch.randn(B, S, 31, generator=g)]
    if name == "EncNormFirstGelu":
        return [x, _padding(B, T)]
    if name == "DecCausal":
        return [x, torch.randn(B, S, C, generator=g), _padding(B, S, row=1, hidden=3)]
    if name == "FullTransformer":
        return [torch.randn(B, S, C, generator=g), x]
    if name == "FullTransformerSeqFirst":
        return [torch.randn(S, B, C, generator=g), x.transpose(0, 1).contiguous()]
    return [x]


TORCH_CASES = [
    pytest.param("MHASeqFirst", id="mha-seq-first-key-padding"),
    pytest.param("MHAKdimVdim", id="mha-kdim-vdim"),
    pytest.param("MHABiasKVZeroAttn", id="mha-bias-kv-zero-attn"),
    pytest.param("MHABiasKVCausal", id="mha-bias-kv-zero-attn-causal-bool-mask"),
    pytest.param("MHABoolMaskCausal", id="mha-bool-mask-with-is-causal"),
    pytest.param("MHAFloatMaskCausal", id="mha-float-mask-per-head-weights"),
    pytest.param("MHAPerHeadWeights", id="mha-average-attn-weights-false"),
    pytest.param("Mha3DMask", id="mha-3d-mask-per-head"),
    pytest.param("EncNormFirstGelu", id="encoder-norm-first-gelu-padding"),
    pytest.param("EncCausal", id="encoder-mask-and-is-causal"),
    pytest.param("DecCausal", id="decoder-tgt-is-causal-memory-masks"),
    pytest.param("FullTransformer", id="transformer-square-subsequent-mask"),
    pytest.param("FullTransformerSeqFirst", id="transformer-seq-first"),
]


@pytest.mark.parametrize("dims", [pytest.param(None, id="probe"), pytest.param(EVEN, id="even")])
@pytest.mark.parametrize("name", TORCH_CASES)
def test_torch_builtin_is_quiet(name, dims):
    torch.manual_seed(0)
    report = st.check(getattr(TM, name), inputs=_inputs(name, Dims(dims)), dims=dims,
                      init={"d_model": "C", "nhead": "H"})
    assert_quiet(report)


class FloatMaskOneAhead(nn.Module):
    """A float mask made without a dtype that lets each query see one key ahead: a causal leak,
    found only if the float64 re-run accepts the float32-by-default mask."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=2)
        return self.mha(x, x, x, attn_mask=mask)[0]


def test_float_mask_made_without_a_dtype_is_checked():
    report = st.check(FloatMaskOneAhead, init={"d_model": "C", "nhead": "H"}, causal=True)
    (result,) = report.targets
    assert not _gave_up(result), show(report)
    assert [d for d in report.diagnostics if d.rule == "causal-leak"], show(report)
    assert torch.get_default_dtype() == torch.float32  # the re-run put the default back


# --- Hugging Face -------------------------------------------------------------------------------

def build(name, s, impl, experts=None):
    C, H, d, V, L = s["C"], s["H"], s["d"], s["V"], s["L"]
    common = {"vocab_size": V, "attn_implementation": impl}
    if name == "llama-gqa":
        return tf.LlamaModel(tf.LlamaConfig(
            hidden_size=C, num_attention_heads=H, num_key_value_heads=2, head_dim=d,
            num_hidden_layers=1, intermediate_size=2 * C, max_position_embeddings=L, **common))
    if name == "mistral-window":
        return tf.MistralModel(tf.MistralConfig(
            hidden_size=C, num_attention_heads=H, num_key_value_heads=2, head_dim=d,
            num_hidden_layers=1, intermediate_size=2 * C, max_position_embeddings=L,
            sliding_window=3, **common))
    if name == "mixtral":
        return tf.MixtralForCausalLM(tf.MixtralConfig(
            hidden_size=C, num_attention_heads=H, num_key_value_heads=2, head_dim=d,
            num_hidden_layers=1, intermediate_size=2 * C, max_position_embeddings=L,
            num_local_experts=3, num_experts_per_tok=2, experts_implementation=experts, **common))
    if name == "qwen2-moe":
        return tf.Qwen2MoeForCausalLM(tf.Qwen2MoeConfig(
            hidden_size=C, num_attention_heads=H, num_key_value_heads=2, num_hidden_layers=1,
            intermediate_size=2 * C, moe_intermediate_size=C, shared_expert_intermediate_size=C,
            num_experts=3, num_experts_per_tok=2, max_position_embeddings=L,
            experts_implementation=experts, **common))
    if name == "gpt-neox":
        return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(
            hidden_size=C, num_attention_heads=H, num_hidden_layers=1, intermediate_size=2 * C,
            max_position_embeddings=L, rotary_pct=0.25, **common))
    raise KeyError(name)


GQA = {"d": 8, "H": 6}  # 6 query heads over 2 key/value heads, an even head size for rotary
HF_DIMS = {"llama-gqa": GQA, "mistral-window": GQA, "mixtral": GQA, "qwen2-moe": GQA,
           "gpt-neox": {"d": 8}}
HF_CASES = [pytest.param(name, impl, id=f"{name}-{impl}") for name in HF_DIMS
            for impl in ("eager", "sdpa")]


@pytest.mark.parametrize(("name", "impl"), HF_CASES)
def test_hugging_face_model_is_quiet(name, impl):
    """Sparse MoE routes each token on its own (no capacity, no token dropped): no batch-leak.
    The experts run one by one in Python: torch's grouped matmul, transformers' CPU default,
    has no float64 kernel for the behaviour checks' re-run."""
    dims = HF_DIMS[name]
    torch.manual_seed(0)
    model = build(name, Dims(dims), impl, experts="eager")
    assert_quiet(st.check(model, inputs=["input_ids=B,T:long:V"], dims=dims))


@pytest.mark.parametrize("name", ["llama-gqa", "mixtral", "gpt-neox"])
def test_hugging_face_eager_attention_is_read(name):
    dims = HF_DIMS[name]
    sizes = Dims(dims)
    torch.manual_seed(0)
    model = build(name, sizes, "eager", experts="eager").eval()
    with st.trace(model, dims=dims) as t:
        model(torch.randint(0, sizes["V"], (sizes["B"], sizes["T"])))
    (found,) = analyse(t).attentions
    assert found.scores is not None and found.uses[0].matmul.weight_sums
    assert not [d for d in t.diagnostics if d.severity != "info"], \
        "\n".join(f"{d.rule}: {d.message}" for d in t.diagnostics)


def test_moe_routing_mask_reversed_by_permute_is_not_a_reversed_transpose():
    """Mixtral's experts turn one_hot(top_k, E) (tokens, k, E) into (E, k, tokens) with
    permute(2, 1, 0): every axis spelled out, on integers. A float tensor reversed the same way
    is still flagged (tests/data/styles/key_transposes.py)."""
    torch.manual_seed(0)
    sizes = Dims(GQA)
    model = build("mixtral", sizes, "eager", experts="eager").eval()
    with st.trace(model, dims=GQA) as t:
        model(torch.randint(0, sizes["V"], (sizes["B"], sizes["T"])))
    assert any(r.op == "Tensor.permute" and len(r.inputs[0].shape) == 3
               and not r.inputs[0].dtype.is_floating_point for r in t.records)
    assert not [d for d in t.diagnostics if d.rule == "reversed-transpose"]


def test_moe_with_grouped_matmul_experts_is_quiet():
    """At transformers' default experts kernel the trace rules still read the model and find
    nothing; the behaviour checks say why they could not run instead of flagging anything."""
    torch.manual_seed(0)
    model = build("mixtral", Dims(GQA), "sdpa")
    report = st.check(model, inputs=["input_ids=B,T:long:V"], dims=GQA)
    (result,) = report.targets
    assert result.error is None, result.error
    assert not report.errors and not [d for d in report.diagnostics if d.rule in STRICT], \
        show(report)
    assert any("Float32, BFloat16 or Float16" in n for n in _gave_up(result)), show(report)


def _padded_ids(s):
    mask = torch.ones(s["B"], s["T"], dtype=torch.long)
    mask[0, -2:] = 0
    return mask


WRAPPED = [
    pytest.param("GPT2Cached", {"n_embd": "C", "n_head": "H", "vocab_size": "V", "block_size": "L"},
                 None, lambda s: ["idx=B,T:long:V"], (), id="gpt2-past-key-values"),
    pytest.param("BertPairs", {"hidden_size": "C", "num_heads": "H", "vocab_size": "V", "max_len": "L"},
                 None, lambda s: [torch.randint(0, s["V"], (s["B"], s["T"])),
                                  (torch.arange(s["T"]) >= 3).long().expand(s["B"], -1).clone(),
                                  _padded_ids(s)], (), id="bert-token-type-ids"),
    pytest.param("T5Decoder", {"d_model": "C", "num_heads": "H", "head_dim": "d", "vocab_size": "V"},
                 None, lambda s: ["input_ids=B,T:long:V", "encoder_hidden_states=B,S,C"],
                 ("attention-scale",), id="t5-decoder"),  # T5 folds the scale into its init
    pytest.param("MistralPadded", {"hidden_size": "C", "num_heads": "H", "head_dim": "d",
                                   "vocab_size": "V", "max_len": "L"},
                 GQA, lambda s: [torch.randint(0, s["V"], (s["B"], s["T"])), _padded_ids(s)], (),
                 id="mistral-sliding-window-padded"),
]


@pytest.mark.parametrize(("name", "init", "dims", "inputs", "allowed"), WRAPPED)
def test_hugging_face_in_use_is_quiet(name, init, dims, inputs, allowed):
    torch.manual_seed(0)
    report = st.check(getattr(HF, name), init=init, inputs=inputs(Dims(dims)), dims=dims)
    assert_quiet(report, allowed)
    for d in report.diagnostics:  # an allowed rule is the T5 unscaled warning, never an error
        assert d.severity != "error", show(report)


# --- the command line -------------------------------------------------------------------------

def test_command_line_on_a_file_of_builtins():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-m", "shapetrace", "tests/data/builtins/cli_builtins.py",
                           "--dims", "d=8,H=6", "--format", "json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    targets = json.loads(proc.stdout)["targets"]
    assert [t["target"].rsplit("::", 1)[1] for t in targets] == \
        ["SequenceFirstAttention", "PreNormGeluEncoder", "Seq2Seq", "TinyMixtral"]
    for target in targets:
        assert target["ok"] and target["error"] is None, target
        assert not [d for d in target["diagnostics"] if d["severity"] != "info"], target
        assert target["trace"]  # each was run, not skipped
