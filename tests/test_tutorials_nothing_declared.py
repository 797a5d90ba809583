"""Textbook and tutorial styles checked with nothing declared (``python -m shapetrace FILE``):
a from-scratch LLM book's chapter 3 (tests/data/styles/book_ch3.py) and its GPT, a university
tutorial's ``scaled_dot_product`` and fused ``qkv_proj``, the framework's time-first
language-model tutorial, blog and library styles (bmm over folded heads, the lecture's ``Head``,
minGPT, einops, heads-last einsum), wide heads, a blog's generating transformer, and
step-by-step scripts (tests/data/tutorial_scripts/). The corpus files of other libraries' scales,
softmax axes, masks and reshapes are run whole the same way. Correct classes and scripts exit
clean, with inputs and constructor arguments guessed (time-first where the author says so, one
sequence where forward takes one); buggy ones are found at their lines.
"""

from __future__ import annotations

import inspect
import json
import re

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest

from style_corpus import STYLES, bug_line, load

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SCRIPTS_DIR = STYLES.parent / "tutorial_scripts"
MODELS_DIR = STYLES.parent / "whole_models"
#: Corpus files run whole: the tutorials' and, after them, other libraries' styles.
MODULE_FILES = ["book_ch3.py", "university_tutorial.py", "lm_tutorial.py",
                "blogs_and_libraries.py", "wide_heads.py",
                "scales.py", "softmax_axes.py", "infinite_masks.py", "head_reshapes.py"]
SCRIPTS = ["sentence.py", "illustrated.py", "mathematical_trick.py", "book_ch3.py",
           "numpy_steps.py"]


def _load(path):
    return load(path, "tutorials")


# --- the command line, nothing declared -----------------------------------------------------------

def _cli(capsys, *args: str) -> tuple[int, dict]:
    from shapetrace.frontends.cli import main

    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _loud(target: dict, allowed=()) -> list[tuple[str, int]]:
    """The errors and warnings of a target, but the warnings its class declares ``ALLOWED``."""
    return [(d["rule"], d["line"]) for d in target["diagnostics"]
            if d["severity"] == "error" or (d["severity"] == "warning" and d["rule"] not in allowed)]


def _line_with(cls, text: str) -> int:
    lines, start = inspect.getsourcelines(cls)
    return next(start + i for i, line in enumerate(lines) if text in line)


def _bug(cls):
    """The rule a class should be found by with nothing declared: its BUG, or, for a forward
    written for one sequence (declared ``x=T,C``), the ``.T`` that a batch breaks."""
    if getattr(cls, "BUG", None):
        return cls.BUG
    if isinstance(cls, type) and getattr(cls, "INPUTS", None) == ["x=T,C"]:
        return "reversed-transpose"
    return None


@pytest.mark.parametrize("name", MODULE_FILES)
def test_whole_file_nothing_declared(capsys, name):
    """Correct classes exit clean with inputs and arguments guessed (time-first where the
    author says so, one sequence where forward takes one), but for the warnings they declare
    ``ALLOWED``; buggy ones are found at their line."""
    code, report = _cli(capsys, str(STYLES / name))
    module = _load(STYLES / name)
    buggy = any(_bug(c) for c in vars(module).values() if isinstance(c, type))
    assert code == (1 if buggy else 0)
    for target in report["targets"]:
        cls = getattr(module, target["target"].rpartition("::")[2])
        assert target["error"] is None, target
        bug = _bug(cls)
        if getattr(cls, "UNDECLARED", None):  # a bug found only once intent is declared
            assert not _loud(target) and any(n.startswith(cls.UNDECLARED) for n in target["notes"]), \
                (cls.__name__, target["diagnostics"], target["notes"])
        elif bug is None:
            assert _loud(target, getattr(cls, "ALLOWED", ())) == [], \
                (cls.__name__, target["diagnostics"])
        else:
            line = bug_line(cls) if getattr(cls, "BUG", None) else _line_with(cls, "keys.T")
            assert (bug, line) in _loud(target), (cls.__name__, target["diagnostics"])


def test_single_sequence_forward_is_checked_with_a_batch_unless_told(capsys):
    """``queries @ keys.T`` is right for one (T, C) sequence and reverses (B, T, C) whole:
    with nothing declared the module is checked with a batch and the ``.T`` is the bug (seed
    004's own SelfAttention); declared as one sequence, it is clean."""
    path = f"{STYLES / 'book_ch3.py'}::RaschkaSelfAttentionV1"
    code, report = _cli(capsys, path)
    assert code == 1 and ("reversed-transpose", 23) in _loud(report["targets"][0])
    code, report = _cli(capsys, path, "--input", "x=T,C")
    assert (code, _loud(report["targets"][0])) == (0, [])
    code, report = _cli(capsys, f"{STYLES / 'book_ch3.py'}::RaschkaCausal3DTranspose")
    assert code == 1 and ("reversed-transpose", 181) in _loud(report["targets"][0])


def test_time_first_is_read_from_the_authors_words():
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_inputs

    more, tut = _load(STYLES / "blogs_and_libraries.py"), _load(STYLES / "lm_tutorial.py")
    dims = Dims()
    shown = lambda cls: [str(s) for s in infer_inputs(cls, dims)]  # noqa: E731
    assert shown(more.LabmlMultiHeadAttention)[:3] == ["query=T,B,C", "key=S,B,C", "value=S,B,C"]
    assert shown(more.LabmlCausal) == ["x=T,B,C"]  # inherits its base's word
    assert shown(tut.TutPositionalEncoding) == ["x=T,B,C"]  # the docstring
    assert shown(tut.OldTutPositionalEncoding) == ["x=T,B,C"]  # self.pe[:x.size(0), :]
    assert shown(tut.TutPositionsOverBatch) == ["src=B,T,C"]  # another module's table: batch-first
    assert shown(more.MinGPTCausalSelfAttention) == ["x=B,T,C"]  # B, T, C = x.size()
    assert shown(more.LucidAttention) == ["x=B,T,C"]  # says nothing


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_run_clean(capsys, name):
    code, report = _cli(capsys, str(SCRIPTS_DIR / name))
    assert report["targets"][0]["error"] is None
    assert (code, _loud(report["targets"][0])) == (0, [])


def test_script_scaled_by_the_width_not_the_head(capsys, tmp_path):
    """At the script's own sizes nothing is named, but q and k are projections of 32 features
    into 16: a scale of 1/sqrt(32) is the width's, said in numbers; with a head as wide as the
    width (16 -> 32 here) the same line is right."""
    path = SCRIPTS_DIR / "scaled_by_width.py"
    code, report = _cli(capsys, str(path))
    found = [d for d in report["targets"][0]["diagnostics"] if d["rule"] == "attention-scale"]
    assert code == 1 and [(d["line"], d["severity"]) for d in found] == [(16, "error")]
    assert "1/sqrt(32) instead of 1/sqrt(16)" in found[0]["message"]
    assert " C" not in found[0]["message"].split("(")[0]  # no name is proven at these sizes
    wide = tmp_path / "wide_head.py"
    wide.write_text(path.read_text().replace("head_size = 16", "head_size = 32"))
    code, report = _cli(capsys, str(wide))
    assert (code, _loud(report["targets"][0])) == (0, [])


@pytest.mark.parametrize("name", ["classic_bugs.py", "book_ch3_bugs.py", "numpy_steps_bugs.py"])
def test_script_bugs_found_at_their_lines(capsys, name):
    path = SCRIPTS_DIR / name
    marked = {(m.group(1), i) for i, text in enumerate(path.read_text().splitlines(), 1)
              if (m := re.search(r"# BUG: ([a-z-]+)$", text))}
    code, report = _cli(capsys, str(path))
    assert code == 1
    assert marked <= set(_loud(report["targets"][0])), report["targets"][0]["diagnostics"]
    assert len(marked) >= 2


def test_module_level_config_dict_is_read_at_probe_sizes(capsys):
    """``GPTModel(cfg)`` reading ``cfg["emb_dim"]`` from a module-level dict: built at the probe
    sizes (the dict's own 768 and 50257 would be unnamed and slow), every class exit 0."""
    code, report = _cli(capsys, str(MODELS_DIR / "book_gpt.py"))
    assert [t["error"] for t in report["targets"]] == [None] * 6
    assert (code, [_loud(t) for t in report["targets"]]) == (0, [[]] * 6)
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_init

    module, dims = _load(MODELS_DIR / "book_gpt.py"), Dims()
    cfg = infer_init(module.GPTModel, dims)["cfg"]
    assert (cfg["emb_dim"], cfg["n_heads"], cfg["vocab_size"], cfg["drop_rate"]) == (
        dims["C"], dims["H"], dims["V"], 0.0)
    assert cfg["n_layers"] == 2 and cfg["qkv_bias"] is False and cfg["context_length"] >= dims["T"]
    assert module.GPT_CONFIG_124M["emb_dim"] == 768  # the user's dict is left as it was


def test_folded_heads_generator_exit_0_and_checked_causal(capsys):
    """Token ids guessed from the embedding, the triu_indices write read as a causal mask, and a
    block whose ``mask`` flag cannot be guessed is checked as the model builds it."""
    path = MODELS_DIR / "blog_gpt.py"
    code, report = _cli(capsys, f"{path}::GTransformer")
    target = report["targets"][0]
    assert (code, target["error"], _loud(target)) == (0, None, [])
    assert not any("causal-leak not checked" in n for n in target.get("notes") or [])
    code, report = _cli(capsys, f"{path}::TransformerBlock")
    target = report["targets"][0]
    assert (code, target["error"], _loud(target)) == (0, None, [])
    assert any(n.startswith("mask=True as blog_gpt.py:61 passes it") and "--init mask=VALUE" in n
               for n in target["notes"]), target["notes"]  # the value the model builds it with
    assert not any("causal-leak not checked" in n for n in target.get("notes") or [])
