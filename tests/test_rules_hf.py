"""Randomly initialised Hugging Face models are correct attention: no rule may flag them.

Models are built from config objects at the probe sizes (n_embd = H*d), nothing is downloaded.
Each runs with the eager attention (softmax and matmuls in Python, which the attention rules
read) and with scaled_dot_product_attention.
"""

from __future__ import annotations

import logging

import pytest
import torch

import shapetrace
from shapetrace.base.dims import Dims
from shapetrace.analysis.facts import analyse

import transformers  # noqa: E402 - a test extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

OWN_RULES = ("softmax-axis", "attention-scale", "unnormalized-attention", "silent-broadcast",
             "discarded-result", "reversed-transpose", "non-finite", "dim-collision")


@pytest.fixture(autouse=True)
def _quiet_transformers():
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def gpt2(sizes, impl):
    config = transformers.GPT2Config(n_embd=sizes["C"], n_head=sizes["H"], n_layer=1,
                                     vocab_size=sizes["V"], n_positions=sizes["L"],
                                     attn_implementation=impl)
    return transformers.GPT2LMHeadModel(config)


def bert(sizes, impl):
    config = transformers.BertConfig(hidden_size=sizes["C"], num_attention_heads=sizes["H"],
                                     num_hidden_layers=1, intermediate_size=4 * sizes["C"],
                                     vocab_size=sizes["V"], max_position_embeddings=sizes["L"],
                                     attn_implementation=impl)
    return transformers.BertModel(config)


def llama(sizes, impl, kv_heads=None):
    config = transformers.LlamaConfig(hidden_size=sizes["C"], num_attention_heads=sizes["H"],
                                      num_key_value_heads=kv_heads or sizes["H"],
                                      head_dim=sizes["d"], num_hidden_layers=1,
                                      intermediate_size=4 * sizes["C"], vocab_size=sizes["V"],
                                      max_position_embeddings=sizes["L"], attn_implementation=impl)
    return transformers.LlamaForCausalLM(config)


def llama_mqa(sizes, impl):
    return llama(sizes, impl, kv_heads=1)


def llama_gqa(sizes, impl):
    return llama(sizes, impl, kv_heads=2)


MODELS = [
    pytest.param(gpt2, None, id="gpt2"),
    pytest.param(bert, None, id="bert"),
    pytest.param(llama, {"d": 8}, id="llama"),  # rotary embeddings need an even head size
    pytest.param(llama_mqa, {"d": 8}, id="llama-multi-query"),
    pytest.param(llama_gqa, {"d": 8, "H": 6}, id="llama-grouped-query"),
]


def trace_model(build, dims, impl, attention_mask=False):
    sizes = Dims(dims)
    torch.manual_seed(0)
    model = build(sizes, impl).eval()
    ids = torch.randint(0, sizes["V"], (sizes["B"], sizes["T"]))
    kwargs = {}
    if attention_mask:
        mask = torch.ones(sizes["B"], sizes["T"], dtype=torch.long)
        mask[0, -2:] = 0  # the first sample is padded: its last two keys are hidden
        kwargs["attention_mask"] = mask
    with shapetrace.trace(model, dims=dims) as t:
        model(ids, **kwargs)
    return t


def show(diagnostics) -> str:
    return "\n".join(f"{d.severity} {d.rule} {d.location}: {d.message}" for d in diagnostics)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize(("build", "dims"), MODELS)
def test_hugging_face_model_is_quiet(build, dims, impl):
    t = trace_model(build, dims, impl)
    assert not [d for d in t.diagnostics if d.severity == "error"], show(t.diagnostics)
    assert not [d for d in t.diagnostics if d.rule in OWN_RULES], show(t.diagnostics)


@pytest.mark.parametrize(("build", "dims"), MODELS)
def test_eager_attention_is_read(build, dims):
    """The quiet result above is not for lack of looking: the eager attention is found."""
    t = trace_model(build, dims, "eager")
    found = analyse(t).attentions
    assert len(found) == 1  # one layer
    assert found[0].scores is not None
    assert found[0].uses[0].matmul.weight_sums


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("build", [pytest.param(bert, id="bert"), pytest.param(gpt2, id="gpt2")])
def test_padding_mask_is_quiet(build, impl):
    t = trace_model(build, None, impl, attention_mask=True)
    assert not [d for d in t.diagnostics if d.rule in OWN_RULES or d.severity == "error"], \
        show(t.diagnostics)
