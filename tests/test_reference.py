"""reference-mismatch: a module compared with a reference implementation at the same weights.

Students in tests/data/reference/students.py against the repository's reference models (as an
instructor's solution would be), through ``check()``, the command line, the config and the
pytest plugin's target items; and a fused key/value projection of the style corpus matched to
separate weights.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch.nn.functional as F

import shapetrace as st
import style_corpus
from shapetrace.frontends.cli import main
from shapetrace.drive.config import load_config
from shapetrace.base.errors import UsageError
from shapetrace.drive.reference_weights import role
from shapetrace.drive.targets import resolve_targets
from test_pytest_plugin import RUNS

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
STUDENTS = "tests/data/reference/students.py"
SEPARATE = "reference_models/m06_multi_head.py::MultiHeadAttention"
FUSED = "reference_models/m07_fused_qkv.py::FusedQKVAttention"


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _marked_line(kind: str) -> int:
    for number, text in enumerate((ROOT / STUDENTS).read_text().splitlines(), 1):
        if f"# PARTS: {kind}" in text:
            return number
    raise AssertionError(f"no '# PARTS: {kind}' in {STUDENTS}")


def check(name: str, reference: str = SEPARATE):
    (target,) = resolve_targets(f"{STUDENTS}::{name}", root=ROOT)
    return st.check(target.cls, target=target.display, reference=reference).targets[0]


def mismatches(result):
    return [d for d in result.diagnostics if d.rule == "reference-mismatch"]


@pytest.mark.parametrize("name, reference", [
    pytest.param("Correct", SEPARATE, id="other-names-vs-separate"),
    pytest.param("SameKeysSDPA", SEPARATE, id="same-keys-sdpa"),
    pytest.param("EinsumBHLayout", SEPARATE, id="einsum-batch-heads-layout"),
    pytest.param("FusedQKV", SEPARATE, id="fused-vs-separate"),
    pytest.param("FusedPerHead", SEPARATE, id="fused-per-head-kqv-vs-separate"),
    pytest.param("Correct", FUSED, id="separate-vs-fused"),
    pytest.param("SameKeysSDPA", FUSED, id="sdpa-vs-fused"),
])
def test_correct_submission_is_clean(name, reference):
    result = check(name, reference)
    assert result.error is None, result.error
    assert not mismatches(result), [d.message for d in mismatches(result)]
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("compared with the reference" in n for n in result.notes)


@pytest.mark.parametrize("name, reference, kind, words", [
    pytest.param("JumbledHeads", SEPARATE, "jumbled",
                 ["(B, H, T, d)", "arranged differently across (H, T)", "heads and tokens"],
                 id="jumbled-heads"),
    pytest.param("JumbledHeads", FUSED, "jumbled", ["heads and tokens are mixed up"],
                 id="jumbled-heads-vs-fused"),
    pytest.param("ScaledBySqrtC", SEPARATE, "scale", ["(B, H, T, T)", "sqrt(d/C)"],
                 id="scaled-by-sqrt-c"),
    pytest.param("FusedScaledTwice", SEPARATE, "twice", ["1/sqrt(d)"],
                 id="fused-scaled-twice"),
    pytest.param("NotMasked", SEPARATE, "masking",
                 ["the reference masks", "above the diagonal of (T, T)"], id="not-masked"),
])
def test_mismatch_names_the_parting_op(name, reference, kind, words):
    result = check(name, reference)
    assert result.error is None, result.error
    (diag,) = mismatches(result)
    assert diag.severity == "error" and diag.code == "ST018"
    assert diag.line == _marked_line(kind)
    assert diag.file.endswith("students.py")
    for word in words:
        assert word in diag.message, diag.message
    assert re.search(r"at its line \d+", diag.message)
    assert diag.data["reference_file"].endswith(".py")
    assert not result.ok


def test_jumbled_heads_points_at_the_reference_line():
    diag, = mismatches(check("JumbledHeads"))
    source = (ROOT / "reference_models/m06_multi_head.py").read_text().splitlines()
    assert "transpose(1, 2)" in source[diag.data["reference_line"] - 1]


def test_different_parameter_layout_is_one_clear_error():
    result = check("PerHeadList")
    assert result.error is not None and "\n" not in result.error
    assert "cannot give the reference" in result.error and "no counterpart" in result.error
    assert not result.ok


@pytest.mark.parametrize("name, expected", [
    ("query.weight", "q"), ("W_query.weight", "q"), ("q_proj.bias", "q"), ("to_q.weight", "q"),
    ("wk.weight", "k"), ("key.weight", "k"), ("W_value.weight", "v"), ("proj.weight", "o"),
    ("out_proj.weight", "o"), ("c_proj.weight", "o"), ("c_attn.weight", "qkv"),
    ("in_proj_weight", "qkv"), ("ln_1.weight", None), ("heads.0.net.weight", None),
])
def test_parameter_roles_from_names(name, expected):
    assert role(name) == expected


def test_reference_as_class_and_instance():
    from reference_models.m06_multi_head import MultiHeadAttention

    (target,) = resolve_targets(f"{STUDENTS}::JumbledHeads", root=ROOT)
    by_class = st.check(target.cls, reference=MultiHeadAttention)
    assert [d.rule for d in by_class.diagnostics].count("reference-mismatch") == 1
    instance = MultiHeadAttention(143, 11, 23)
    before = {k: v.clone() for k, v in instance.state_dict().items()}
    (good,) = resolve_targets(f"{STUDENTS}::Correct", root=ROOT)
    assert st.check(good.cls, reference=instance).ok
    after = instance.state_dict()
    assert all(bool((before[k] == after[k]).all()) for k in before)  # the instance is left as it was


def test_reference_file_with_several_classes_picks_the_same_name(tmp_path):
    solution = tmp_path / "solution.py"
    solution.write_text((ROOT / STUDENTS).read_text())
    result = check("Correct", reference=str(solution))
    assert result.error is None and result.ok
    with pytest.raises(UsageError):
        from shapetrace.drive.reference import resolve_reference

        resolve_reference(str(solution), like=None)


# --- a fused key/value projection (tests/data/styles/reference_match.py) ------------------------

def _fused_key_value():
    return style_corpus.load(style_corpus.STYLES / "reference_match.py", "reference")._FusedKeyValue


def test_a_fused_key_value_pair_is_matched_to_separate_weights():
    """A (2C, C) key/value projection beside a separate query is the reference's key and value
    weights joined: matched (either order, blocks or per head), the same function, no finding."""
    result = style_corpus.check(_fused_key_value()).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("your to_kv.weight split into the reference's key.weight, value.weight" in n
               for n in result.notes), result.notes


def test_a_fused_key_value_pair_that_computes_otherwise_differs():
    class Jumbled(_fused_key_value()):
        def forward(self, x):
            B, T, C = x.shape
            k, v = self.to_kv(x).chunk(2, dim=-1)
            q, k, v = (t.reshape(B, self.h, T, C // self.h) for t in (self.to_q(x), k, v))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.to_out(out.transpose(1, 2).reshape(B, T, C))

    result = style_corpus.check(Jumbled).targets[0]
    assert result.error is None, result.error
    assert [d.rule for d in result.diagnostics if d.rule == "reference-mismatch"] == \
        ["reference-mismatch"], result.diagnostics


# --- command line ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, code", [
    pytest.param("Correct", 0, id="correct-0"),
    pytest.param("ScaledBySqrtC", 1, id="mismatch-1"),
    pytest.param("PerHeadList", 2, id="unmatched-weights-2"),
])
def test_cli_exit_codes(capsys, name, code):
    assert main([f"{STUDENTS}::{name}", "--reference", SEPARATE, "--format", "json"]) == code
    out, err = capsys.readouterr()
    report = json.loads(out)
    rules = [d["rule"] for d in report["targets"][0]["diagnostics"]]
    assert ("reference-mismatch" in rules) == (code == 1)
    assert (err.count("\n") == 1 and "cannot give the reference" in err) == (code == 2)


def test_cli_reference_needs_a_target_and_values(capsys):
    assert main(["--reference", SEPARATE]) == 2
    assert main([f"{STUDENTS}::Correct", "--reference", SEPARATE, "--fake"]) == 2
    assert main([f"{STUDENTS}::Correct", "--reference", "nope.py::X"]) == 2
    err = capsys.readouterr().err
    assert "--reference" in err and "nope.py" in err


def test_cli_help_documents_reference(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--reference TARGET" in capsys.readouterr().out
    assert "--reference TARGET" in (ROOT / "README.md").read_text()


# --- config -------------------------------------------------------------------------------------

def test_config_reads_reference_and_points(tmp_path):
    path = tmp_path / "shapetrace.toml"
    path.write_text('[[targets]]\ntarget = "a.py::A"\nreference = "solution/a.py::A"\npoints = 2\n'
                    '[[targets]]\ntarget = "b.py"\n')
    first, second = load_config(path).targets
    assert (first.reference, first.points) == ("solution/a.py::A", 2)
    assert (second.reference, second.points) == (None, 1)


@pytest.mark.parametrize("line, key", [
    pytest.param('reference = 3', "reference", id="reference-not-a-string"),
    pytest.param('reference = ""', "reference", id="reference-empty"),
    pytest.param('points = -1', "points", id="negative-points"),
    pytest.param('points = "two"', "points", id="points-not-a-number"),
])
def test_config_rejects_bad_reference_or_points(tmp_path, line, key):
    path = tmp_path / "shapetrace.toml"
    path.write_text(f'[[targets]]\ntarget = "a.py::A"\n{line}\n')
    with pytest.raises(UsageError, match=rf"targets\[0\]\.{key}"):
        load_config(path)


def test_config_reference_is_relative_to_the_config(capsys, tmp_path):
    course = tmp_path / "course"
    (course / "solution").mkdir(parents=True)
    (course / "student").mkdir()
    (course / "solution" / "attention.py").write_text((ROOT / "reference_models/m06_multi_head.py")
                                                      .read_text().replace("reference_models.", ""))
    (course / "student" / "attention.py").write_text((ROOT / STUDENTS).read_text())
    (course / "shapetrace.toml").write_text(
        '[[targets]]\ntarget = "student/attention.py::ScaledBySqrtC"\n'
        'reference = "solution/attention.py::MultiHeadAttention"\npoints = 2\n'
        '[[targets]]\ntarget = "student/attention.py::Correct"\n'
        'reference = "solution/attention.py::MultiHeadAttention"\n')
    assert main(["--config", str(course / "shapetrace.toml"), "--format", "json"]) == 1
    targets = json.loads(capsys.readouterr().out)["targets"]
    assert [t["ok"] for t in targets] == [False, True]
    assert "reference-mismatch" in [d["rule"] for d in targets[0]["diagnostics"]]


# --- the pytest plugin's target items ----------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_plugin_target_item_compares_with_the_reference(pytester, args):
    """Serial and under -n 2: the items' verdicts, and Gradescope's results.json with them."""
    for folder in ("student", "solution"):
        pytester.mkpydir(folder)
    (pytester.path / "solution" / "attention.py").write_text(
        (ROOT / "reference_models/m06_multi_head.py").read_text())
    (pytester.path / "student" / "attention.py").write_text((ROOT / STUDENTS).read_text())
    targets = "".join(
        f'\n[[tool.shapetrace.targets]]\ntarget = "student/attention.py::{name}"\n'
        f'reference = "solution/attention.py::MultiHeadAttention"\npoints = 2\n'
        for name in ("Correct", "ScaledBySqrtC", "PerHeadList"))
    pytester.makepyprojecttoml(f"[tool.shapetrace]\n{targets}")
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider",
                                           "--shapetrace-gradescope=results.json", *args)
    text = result.stdout.str()
    assert "PASSED shapetrace::student/attention.py::Correct" in text
    assert "FAILED shapetrace::student/attention.py::ScaledBySqrtC" in text
    assert "FAILED shapetrace::student/attention.py::PerHeadList" in text
    assert "reference-mismatch" in text and "sqrt(d/C)" in text
    assert "cannot give the reference" in text
    tests = {t["name"]: t for t in json.loads((pytester.path / "results.json").read_text())["tests"]}
    correct, scaled, per_head = (tests[f"shapetrace::student/attention.py::{name}"]
                                 for name in ("Correct", "ScaledBySqrtC", "PerHeadList"))
    assert (correct["status"], correct["score"], correct["max_score"]) == ("passed", 2.0, 2.0)
    assert (scaled["status"], scaled["score"], scaled["max_score"]) == ("failed", 0.0, 2.0)
    assert "reference-mismatch" in scaled["output"] and "sqrt(d/C)" in scaled["output"]
    assert per_head["status"] == "failed" and "cannot give the reference" in per_head["output"]
