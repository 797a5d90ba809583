"""A corpus of correct attention written in many styles (tests/data/styles/): every module
checked with ``shapetrace.check`` has no error-level finding; the buggy counterparts of
head-grouping and silent-broadcast are found at their line.

Each module in the corpus carries ``INIT`` / ``INPUTS`` (and ``DIMS``) as class attributes; a
buggy one names its rule in ``BUG`` and marks its line with ``# BUG``.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest
import torch

import shapetrace as st
from style_corpus import bug_line, check, load, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

STYLES = Path(__file__).with_name("data") / "styles"
#: The rules this corpus holds to "no finding at all" on correct code (warnings included).
STRICT = ("head-grouping", "silent-broadcast")
#: Correct styles on which a rule still raises a false alarm (strict xfail: a fix shows up).
KNOWN_FALSE_ALARMS: dict[str, str] = {}


def _load(name: str):
    return load(STYLES / f"{name}.py", "styles")


def _modules(kind: str, known: bool = False):
    """The corpus modules of one kind ("correct" or "buggy"); with ``known``, the correct ones
    that a rule owned elsewhere still flags are marked xfail (strict: fixing it shows up)."""
    for path in sorted(STYLES.glob("*.py")):
        if path.stem.startswith(("hunt_", "hunt2_", "hunt4_", "hunt6_", "hunt6b_")):
            continue  # checked, warnings and behaviour bugs included, by test_styles_hunt*.py
            # and test_behaviour_hunt6.py
        module = _load(path.stem)
        for name, cls in vars(module).items():
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)
                    and cls.__module__ == module.__name__ and hasattr(cls, "INPUTS")
                    and not name.startswith("_")):
                continue
            if (getattr(cls, "BUG", None) is None) == (kind == "correct"):
                marks = ()
                reason = KNOWN_FALSE_ALARMS.get(f"{path.stem}::{name}")
                if reason and known:
                    marks = (pytest.mark.xfail(strict=True, reason=reason),)
                yield pytest.param(cls, id=f"{path.stem}-{name}", marks=marks)


@pytest.mark.parametrize("cls", list(_modules("correct", known=True)))
def test_correct_style_has_no_error(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.errors, show(report)


@pytest.mark.parametrize("cls", list(_modules("correct")))
def test_correct_style_raises_no_grouping_or_broadcast_warning(cls):
    report = check(cls, behaviour=False)
    assert not [d for d in report.diagnostics if d.rule in STRICT], show(report)


@pytest.mark.parametrize("cls", list(_modules("buggy")))
def test_buggy_style_is_found_at_its_line(cls):
    report = check(cls, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == cls.BUG]
    assert found, show(report)
    assert [d.line for d in found] == [bug_line(cls)], show(report)
    assert found[0].hint


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


# --- the command line on two of the styles ---------------------------------------------------------

@pytest.mark.parametrize(("target", "code", "rule"), [
    pytest.param("textbook.py::MultiHeadedAttention", 0, None, id="annotated-transformer-clean"),
    pytest.param("grouped.py::TiledRepeat", 0, "head-grouping", id="tiled-gqa-warns"),
])
def test_cli_on_styles(capsys, target, code, rule):
    import json

    from shapetrace.frontends.cli import main

    cls = _load(target.split(".py")[0])
    spec = getattr(cls, target.split("::")[1])
    args = [str(STYLES / target), "--format", "json"]
    for item in spec.INPUTS:
        args += ["--input", item]
    init = ",".join(f"{k}={v}" for k, v in spec.INIT.items())
    args += ["--init", init]
    if getattr(spec, "DIMS", None):
        args += ["--dims", ",".join(f"{k}={v}" for k, v in spec.DIMS.items())]
    assert main(args) == code
    report = json.loads(capsys.readouterr().out)
    rules = [d["rule"] for d in report["targets"][0]["diagnostics"]]
    assert rules == ([rule] if rule else []), rules


def _fixable():
    for param in _modules("buggy"):
        cls = param.values[0]
        if cls.BUG == "head-grouping" and cls.__name__ != "TiledExpand":
            yield param


@pytest.mark.parametrize("cls", list(_fixable()))
def test_head_grouping_hint_pasted_back_makes_the_module_clean(cls, tmp_path):
    """The hint carries the user's line rewritten; pasting it over the line fixes the bug."""
    found = [d for d in check(cls, behaviour=False).diagnostics if d.rule == "head-grouping"]
    number, _, fixed = found[0].hint.partition(": ")[2].partition("  ")
    assert int(number) == found[0].line
    path = Path(inspect.getsourcefile(cls))
    lines = path.read_text().splitlines()
    indent = lines[found[0].line - 1][:len(lines[found[0].line - 1]) - len(lines[found[0].line - 1].lstrip())]
    lines[found[0].line - 1] = indent + fixed
    copy = tmp_path / path.name
    copy.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"fixed_{path.stem}_{cls.__name__}", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = check(getattr(module, cls.__name__), behaviour=False)
    assert not [d for d in report.diagnostics if d.rule == "head-grouping"], show(report)
    assert not report.errors, show(report)
