"""Attention in many styles beyond what the style corpus checks (tests/test_style_corpus.py):
the lecture notes' own matmul broadcast, randomly initialised Hugging Face models (no error, no
head-grouping or silent-broadcast finding; Llama's repeat_kv written with ``repeat`` flagged
once for all its layers), and the command line on modules of the corpus (exit 0 on correct
ones, the buggy one's rule and exit 1).
"""

from __future__ import annotations

import inspect

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest
import torch

import shapetrace as st
from style_corpus import STYLES, load, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: The rules no Hugging Face model may raise, at any severity.
STRICT = ("head-grouping", "silent-broadcast")


# --- the lecture notes' own example, traced at its own sizes ---------------------------------------

def test_lecture_notes_matmul_broadcast_is_flagged():
    """``(7,2,3,4) @ (7,1,4,5)``, which the notes call really hard to find, is a warning; the
    equal and the missing leading axes next to it are not."""
    with st.trace() as t:
        same = torch.rand((7, 2, 3, 4)) @ torch.rand((7, 2, 4, 5))
        missing = torch.rand((7, 2, 3, 4)) @ torch.rand((2, 4, 5))
        stretched = torch.rand((7, 2, 3, 4)) @ torch.rand((7, 1, 4, 5)); line = inspect.currentframe().f_lineno  # noqa: E702
    assert same.shape == missing.shape == stretched.shape == (7, 2, 3, 5)
    found = [d for d in t.diagnostics if d.rule == "silent-broadcast"]
    assert [d.line for d in found] == [line], [(d.line, d.message) for d in t.diagnostics]
    assert "size 1 where the other operand has 2" in found[0].message


# --- Hugging Face models, randomly initialised from configs ----------------------------------------

def _config_model(name: str, impl: str):
    import transformers
    from shapetrace.base.dims import Dims

    s = Dims(HF_DIMS.get(name))
    common = {"vocab_size": s["V"], "attn_implementation": impl}
    if name == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_embd=s["C"], n_head=s["H"], n_layer=2, n_positions=s["L"], **common))
    if name == "bert":
        return transformers.BertModel(transformers.BertConfig(
            hidden_size=s["C"], num_attention_heads=s["H"], num_hidden_layers=2,
            intermediate_size=4 * s["C"], max_position_embeddings=s["L"], **common))
    if name.startswith("llama"):
        kv = {"llama": s["H"], "llama-gqa": 2, "llama-mqa": 1}[name]
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(
            hidden_size=s["C"], num_attention_heads=s["H"], num_key_value_heads=kv,
            head_dim=s["d"], num_hidden_layers=2, intermediate_size=4 * s["C"],
            max_position_embeddings=s["L"], **common))
    if name == "t5":
        return transformers.T5EncoderModel(transformers.T5Config(
            d_model=s["C"], d_kv=s["d"], num_heads=s["H"], d_ff=4 * s["C"], num_layers=2,
            relative_attention_num_buckets=8, relative_attention_max_distance=16, **common))
    if name == "gpt-neox":
        return transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
            hidden_size=s["C"], num_attention_heads=s["H"], num_hidden_layers=2,
            intermediate_size=4 * s["C"], max_position_embeddings=s["L"], rotary_pct=1.0,
            **common))
    raise KeyError(name)


HF_DIMS = {"llama": {"d": 8}, "llama-gqa": {"d": 8, "H": 6}, "llama-mqa": {"d": 8},
           "gpt-neox": {"d": 8}}
HF = [pytest.param(name, impl, id=f"{name}-{impl}")
      for name in ("gpt2", "bert", "llama", "llama-gqa", "llama-mqa", "t5", "gpt-neox")
      for impl in ("eager", "sdpa")]


@pytest.fixture()
def _quiet_transformers():
    import logging

    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.mark.usefixtures("_quiet_transformers")
@pytest.mark.parametrize(("name", "impl"), HF)
def test_hugging_face_model_has_no_error(name, impl):
    model = _config_model(name, impl)
    report = st.check(model, inputs=["input_ids=B,T:long:V"], dims=HF_DIMS.get(name))
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.errors, show(report)
    assert not [d for d in report.diagnostics if d.rule in STRICT], show(report)


def _tiled_repeat_kv(hidden_states, n_rep):
    """Llama's repeat_kv written with ``repeat``: the heads tiled, not repeated in place."""
    return hidden_states.repeat(1, n_rep, 1, 1)


@pytest.mark.usefixtures("_quiet_transformers")
def test_llama_with_tiled_repeat_kv_is_flagged(monkeypatch):
    import transformers  # noqa: F401 - a test extra
    from transformers.models.llama import modeling_llama

    monkeypatch.setattr(modeling_llama, "repeat_kv", _tiled_repeat_kv)
    model = _config_model("llama-gqa", "eager")
    report = st.check(model, inputs=["input_ids=B,T:long:V"], dims=HF_DIMS["llama-gqa"],
                      behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "head-grouping"]
    line = inspect.getsourcelines(_tiled_repeat_kv)[1] + 2
    assert found and {d.line for d in found} == {line}, show(report)
    # one finding for the line, though 2 layers x (keys, values) ran it
    assert len(found) == 1 and found[0].count == 4, show(report)
    assert found[0].modules[0].endswith("layers.0.self_attn")
    assert found[0].modules[-1].endswith("layers.1.self_attn")


# --- the command line on modules of the corpus ---------------------------------------------------

def _cli(capsys, target: str) -> tuple[int, list[str]]:
    """``python -m shapetrace FILE::Name --format json`` with what the corpus class declares:
    the exit code and the rules found."""
    import json

    from shapetrace.frontends.cli import main

    name, _, class_name = target.partition("::")
    cls = getattr(load(STYLES / name, "styles"), class_name)
    args = [str(STYLES / target), "--format", "json"]
    for item in cls.INPUTS:
        args += ["--input", item]
    if getattr(cls, "INIT", None):
        args += ["--init", ",".join(f"{k}={v}" for k, v in cls.INIT.items())]
    if getattr(cls, "DIMS", None):
        args += ["--dims", ",".join(f"{k}={v}" for k, v in cls.DIMS.items())]
    code = main(args)
    report = json.loads(capsys.readouterr().out)
    return code, [d["rule"] for d in report["targets"][0]["diagnostics"]]


@pytest.mark.parametrize(("target", "code", "rule"), [
    pytest.param("textbook.py::MultiHeadedAttention", 0, None, id="annotated-transformer-clean"),
    pytest.param("grouped.py::TiledRepeat", 0, "head-grouping", id="tiled-gqa-warns"),
])
def test_cli_on_styles(capsys, target, code, rule):
    assert _cli(capsys, target) == (code, [rule] if rule else [])


@pytest.mark.parametrize("name", ["PrefixLM", "TalkingHeads", "CosineAttentionLearnedTemperature"])
def test_cli_on_correct_styles_exits_0(capsys, name):
    assert _cli(capsys, f"lookalikes.py::{name}") == (0, [])


def test_cli_on_the_relative_shift_exits_0(capsys):
    assert _cli(capsys, "in_models.py::TransformerXLRelative") == (0, [])


def test_cli_on_a_buggy_style_exits_1(capsys):
    code, rules = _cli(capsys, "variants_bugs.py::TriuBufferKeepsFuture")
    assert code == 1 and "causal-leak" in rules
