"""A whole course in one run (SPEC sections 4, 5, 7): every report names the right student's
file, a broken submission fails alone, GitHub's and Gradescope's limits and settings are kept,
each target says which checks ran, one mistake on sibling lines is one finding, and the checks
that re-run a module are made once for code handed in many times.

The course here is as a class hands one in: most files byte-identical copies of a few versions,
a few that do not even import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.drive.jobs import Job
from shapetrace.drive.reuse import Reuse
from shapetrace.frontends.cli import main
from test_pytest_plugin import ATTENTION, JUMBLED_SPLIT, RIGHT_SPLIT, RUNS, outcomes, run

pytest_plugins = ["pytester"]

BUGGY = ATTENTION.format(split=JUMBLED_SPLIT)
FIXED = ATTENTION.format(split=RIGHT_SPLIT)
LINE = 16  # the jumbled split's line in BUGGY

TARGET = '''
[[tool.shapetrace.targets]]
target = "{target}"
init = {{ n_embd = "C", n_head = "H" }}
inputs = ["x=B,T,C"]
causal = false
{extra}'''


def course(root: Path, students: dict[str, str], *, settings: str = "", extra: dict | None = None,
           pytest_ini: bool = True) -> list[str]:
    """``students``: folder -> file text (a key with a ``/`` names the file itself). Writes
    ``pyproject.toml`` naming each ``folder/attention.py::Attention`` (or the file as given)."""
    targets = []
    for folder, text in students.items():
        path = root / (folder if folder.endswith(".py") else f"{folder}/attention.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is not None:
            path.write_text(text)
        spec = str(path.relative_to(root)) + ("" if folder.endswith(".py") else "::Attention")
        targets.append(spec)
    entries = "".join(TARGET.format(target=t, extra=(extra or {}).get(t, "")) for t in targets)
    ini = "[tool.pytest.ini_options]\n\n" if pytest_ini else ""
    (root / "pyproject.toml").write_text(f"{ini}[tool.shapetrace]\n{settings}\n{entries}")
    return targets


def cli_json(root: Path, monkeypatch, capsys, *args) -> tuple[int, dict]:
    monkeypatch.chdir(root)
    code = main(["--config", "pyproject.toml", "--format", "json", "--no-trace", *args])
    return code, json.loads(capsys.readouterr().out)


# --- attribution ---------------------------------------------------------------------------------

def test_identical_files_each_name_their_own(tmp_path, monkeypatch, capsys):
    """Code objects of byte-identical files compare equal: positions must still be each file's."""
    students = {f"s{i:02d}": BUGGY for i in range(12)}
    course(tmp_path, students)
    code, report = cli_json(tmp_path, monkeypatch, capsys)
    assert code == 1
    for target in report["targets"]:
        folder = target["target"].split("/")[0]
        files = {d["file"] for d in target["diagnostics"]}
        assert files == {f"{folder}/attention.py"}, target["target"]
        trace_files = {op["file"] for op in target["trace"]} - {None}
        assert trace_files == {f"{folder}/attention.py"}, target["target"]


@pytest.mark.parametrize("args", RUNS)
def test_identical_files_in_the_plugin_each_name_their_own(pytester, args):
    students = {f"s{i:02d}": BUGGY for i in range(8)}
    course(pytester.path, students)
    result = run(pytester, *args, "--shapetrace-gradescope=results.json", "--shapetrace-report=r.json")
    assert set(outcomes(result).values()) == {"FAILED"}
    tests = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert len(tests) == 8
    for test in tests:
        folder = test["name"].split("::")[1].split("/")[0]
        assert f"{folder}/attention.py:{LINE}" in test["output"], test["output"]
        others = {f"s{i:02d}/" for i in range(8)} - {f"{folder}/"}
        assert not any(other in test["output"] for other in others)
    entries = json.loads((pytester.path / "r.json").read_text())["targets"]
    for entry in entries:
        folder = entry["target"].split("/")[0]
        assert {d["file"] for d in entry["diagnostics"]} == {f"{folder}/attention.py"}


# --- a broken submission fails alone -------------------------------------------------------------

NAMESPACE_MAIN = "from models.attn import Attention as Base\n\n\nclass Attention(Base):\n    pass\n"


def broken_course(root: Path) -> None:
    """A correct student, a syntax error, a missing package, a missing file, and two students
    with a ``models/`` folder without ``__init__.py`` (one right, one wrong)."""
    students = {"good": FIXED, "syntax": FIXED.replace("def forward(self, x):", "def forward(self, x)"),
                "imports": "import not_a_package_anyone_has\n" + FIXED, "missing": None,
                "ns_right": NAMESPACE_MAIN, "ns_wrong": NAMESPACE_MAIN, "after": FIXED}
    course(root, students)
    for folder, text in (("ns_right", FIXED), ("ns_wrong", BUGGY)):
        (root / folder / "models").mkdir()
        (root / folder / "models" / "attn.py").write_text(text)


def test_a_broken_submission_fails_alone_in_a_config_run(tmp_path, monkeypatch, capsys):
    broken_course(tmp_path)
    code, report = cli_json(tmp_path, monkeypatch, capsys)
    assert code == 2
    by_folder = {t["target"].split("/")[0]: t for t in report["targets"]}
    assert set(by_folder) == {"good", "syntax", "imports", "missing", "ns_right", "ns_wrong",
                              "after"}
    assert by_folder["good"]["ok"] and by_folder["after"]["ok"] and by_folder["ns_right"]["ok"]
    assert "syntax error" in by_folder["syntax"]["error"]
    assert "not_a_package_anyone_has" in by_folder["imports"]["error"]
    assert "no such file" in by_folder["missing"]["error"]
    wrong = by_folder["ns_wrong"]
    assert wrong["error"] is None and not wrong["ok"]  # its own models/, not the other's
    assert {d["file"] for d in wrong["diagnostics"]} == {"ns_wrong/models/attn.py"}


@pytest.mark.parametrize("args", RUNS)
def test_a_broken_submission_fails_alone_in_the_plugin(pytester, args):
    broken_course(pytester.path)
    result = run(pytester, *args, "--shapetrace-gradescope=results.json")
    verdicts = {node.split("::")[1].split("/")[0]: v for node, v in outcomes(result).items()}
    assert verdicts == {"good": "PASSED", "syntax": "FAILED", "imports": "FAILED",
                        "missing": "FAILED", "ns_right": "PASSED", "ns_wrong": "FAILED",
                        "after": "PASSED"}
    tests = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert len(tests) == 7


# --- GitHub Actions -----------------------------------------------------------------------------

def _github(monkeypatch, tmp_path) -> Path:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


def test_cli_prints_at_most_ten_errors_and_summarises_them_all(tmp_path, monkeypatch, capsys):
    root = tmp_path / "course"
    root.mkdir()
    course(root, {f"s{i:02d}": BUGGY for i in range(16)})
    summary = _github(monkeypatch, tmp_path)
    monkeypatch.chdir(root)
    assert main(["--config", "pyproject.toml", "--no-trace"]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::error")]
    assert len(lines) == 10
    assert "7 more errors not shown here" in lines[-1] and "job summary" in lines[-1]
    table = summary.read_text()
    rows = [r for r in table.splitlines() if r.startswith("| s")]
    assert len(rows) == 16 and all(f":{LINE} |" in r for r in rows)


@pytest.mark.parametrize("args", RUNS)
def test_plugin_prints_at_most_ten_errors_and_summarises_them_all(pytester, monkeypatch, args):
    course(pytester.path, {f"s{i:02d}": BUGGY for i in range(12)})
    summary = _github(monkeypatch, pytester.path)
    result = run(pytester, *args)
    lines = [line for line in result.outlines if line.startswith("::error")]
    assert len(lines) == 10
    assert "3 more errors not shown here" in lines[-1]
    rows = [r for r in summary.read_text().splitlines() if r.startswith("| s")]
    assert len(rows) == 12


# --- Gradescope ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_visibility_and_output_format(pytester, args):
    targets = course(pytester.path, {"a": FIXED, "b": BUGGY}, settings='visibility = "after_published"',
                     extra={"b/attention.py::Attention": 'visibility = "hidden"\n'})
    assert targets
    result = run(pytester, *args, "--shapetrace-gradescope=results.json")
    assert outcomes(result)
    tests = {t["name"]: t for t in json.loads((pytester.path / "results.json").read_text())["tests"]}
    assert tests["shapetrace::a/attention.py::Attention"]["visibility"] == "after_published"
    assert tests["shapetrace::b/attention.py::Attention"]["visibility"] == "hidden"
    failed = tests["shapetrace::b/attention.py::Attention"]
    assert failed["output_format"] == "md" and failed["output"].startswith("```\n")
    assert failed["output"].rstrip().endswith("```")


def test_a_wrong_visibility_is_one_line(tmp_path, monkeypatch, capsys):
    course(tmp_path, {"a": FIXED}, settings='visibility = "later"')
    monkeypatch.chdir(tmp_path)
    assert main(["--config", "pyproject.toml"]) == 2
    err = capsys.readouterr().err
    assert "tool.shapetrace.visibility must be one of visible, hidden, after_due_date, " \
           "after_published, got 'later'" in err


@pytest.mark.parametrize("args", RUNS)
def test_results_json_lists_what_an_interrupted_session_did_not_grade(pytester, args):
    course(pytester.path, {f"s{i}": BUGGY for i in range(4)})
    result = run(pytester, *args, "-x", "--shapetrace-gradescope=results.json")
    assert "FAILED" in outcomes(result).values()
    tests = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert len(tests) == 4 and all(t["status"] == "failed" for t in tests)
    if not args:  # serially, -x stops after the first: the other three were never run
        stopped = [t for t in tests if "not graded: the session was interrupted" in t["output"]]
        assert len(stopped) == 3


def test_results_json_lists_a_crashed_worker_s_target(pytester):
    crash = FIXED.replace("        B, T, C = x.shape", "        import os\n        os._exit(3)")
    course(pytester.path, {"a": FIXED, "crash": crash})
    result = run(pytester, "-n", "2", "--shapetrace-gradescope=results.json")
    assert outcomes(result)
    tests = {t["name"]: t for t in json.loads((pytester.path / "results.json").read_text())["tests"]}
    crashed = tests["shapetrace::crash/attention.py::Attention"]
    assert crashed["status"] == "failed" and "not graded" in crashed["output"]
    assert tests["shapetrace::a/attention.py::Attention"]["status"] == "passed"


# --- which checks ran ---------------------------------------------------------------------------

def _checks(report) -> dict:
    return report.targets[0].to_json()["checks"]


def test_every_rule_ran_or_says_why_not():
    from shapetrace.rules.registry import RULES
    from models_basic import MHA

    checks = _checks(st.check(MHA, causal=False))
    named = checks["ran"] + [s["check"] for s in checks["skipped"]]
    assert sorted(named) == sorted(RULES)
    skipped = {s["check"]: s["reason"] for s in checks["skipped"]}
    assert skipped == {"causal-leak": "declared not causal", "reference-mismatch": "no reference named"}


def test_unknown_intent_and_fake_are_said():
    from models_basic import MHA

    namespace: dict = {}
    exec(compile(FIXED, "fixed_attention.py", "exec"), namespace)  # no mask, no causal flag
    plain = st.check(namespace["Attention"], init={"n_embd": "C", "n_head": "H"})
    unknown = {s["check"]: s["reason"] for s in _checks(plain)["skipped"]}
    assert unknown["causal-leak"].startswith("nothing shows that Attention is meant to be causal")
    fake = {s["check"]: s["reason"] for s in _checks(st.check(MHA, fake=True))["skipped"]}
    assert {"batch-leak", "non-finite", "input-mutated"} <= set(fake)
    assert fake["batch-leak"].startswith("--fake")


def test_a_target_that_could_not_run_checked_nothing(tmp_path, monkeypatch, capsys):
    course(tmp_path, {"a": FIXED, "syntax": "def broken(:\n"})
    _, report = cli_json(tmp_path, monkeypatch, capsys)
    broken = next(t for t in report["targets"] if t["error"])
    assert broken["checks"]["ran"] == []
    assert {s["reason"] for s in broken["checks"]["skipped"]} == {"the target could not run"}


def test_a_traced_block_says_the_behaviour_checks_did_not_run():
    import torch

    with st.trace() as t:
        torch.ones(2, 3).softmax(-1)
    from shapetrace.report.results import TargetResult

    skipped = {s["check"] for s in TargetResult("x", trace=t).to_json()["checks"]["skipped"]}
    assert {"batch-leak", "causal-leak", "nondeterministic-eval", "input-mutated",
            "reference-mismatch", "attention-textbook", "not-implemented", "stateful-forward",
            "weight-without-effect", "mask-ignored", "rotary-pairing", "position-frequencies",
            "positions-ignored", "residual-missing", "input-ignored"} == skipped


# --- one root cause, one finding ----------------------------------------------------------------

SIBLINGS = '''
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.q, self.k, self.v = (nn.Linear(n_embd, n_embd) for _ in range(3))

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, self.n_head, T, C // self.n_head)
        k = self.k(x).view(B, self.n_head, T, C // self.n_head)
        v = self.v(x).view(B, self.n_head, T, C // self.n_head)
        att = (q @ k.transpose(-2, -1) * k.size(-1) ** -0.5).softmax(-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)
'''


def test_the_same_mistake_on_sibling_lines_is_one_finding(tmp_path, monkeypatch, capsys):
    course(tmp_path, {"a": SIBLINGS})
    _, report = cli_json(tmp_path, monkeypatch, capsys)
    jumbles = [d for d in report["targets"][0]["diagnostics"] if d["rule"] == "reshape-jumble"]
    assert len(jumbles) == 1
    (found,) = jumbles
    assert found["line"] == 13 and found["lines"] == [13, 14, 15]
    assert [fix["line"] for fix in found["data"]["fixes"]] == [13, 14, 15]
    assert "k = self.k(x).view(B, T, self.n_head" in found["data"]["fixes"][1]["text"]
    monkeypatch.chdir(tmp_path)
    main(["--config", "pyproject.toml", "--no-trace", "--width", "120"])
    assert "a/attention.py:13, 14, 15" in capsys.readouterr().out


def test_different_mistakes_on_neighbouring_lines_stay_apart():
    from shapetrace.base.diagnostics import Diagnostic, merge_siblings

    def d(line, message, rule="reshape-jumble"):
        return Diagnostic(rule, "error", message, file="a.py", line=line, module="M")

    kept = merge_siblings([d(3, "x"), d(4, "y"), d(5, "x", "softmax-axis"), d(30, "x")])
    assert [f.lines for f in kept] == [[3], [4], [5], [30]]


# --- a fix where the mistake is -----------------------------------------------------------------

SOFTMAX_MODULE = '''
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.softmax = nn.Softmax()

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        att = self.softmax(q @ k.transpose(-2, -1) * k.size(-1) ** -0.5)
        return (att @ v).transpose(1, 2).reshape(B, T, C)
'''


def test_a_softmax_module_built_without_dim_is_fixed_where_it_is_built(tmp_path, monkeypatch,
                                                                      capsys):
    course(tmp_path, {"a": SOFTMAX_MODULE})
    _, report = cli_json(tmp_path, monkeypatch, capsys)
    (found,) = [d for d in report["targets"][0]["diagnostics"] if d["rule"] == "softmax-axis"]
    assert found["line"] == 10  # where its dim is chosen
    assert found["used_at"]["line"] == 16  # where it runs
    assert found["data"]["fix"] == {"line": 10, "text": "        self.softmax = nn.Softmax(dim=-1)"}
    assert found["hint"].endswith("10  self.softmax = nn.Softmax(dim=-1)")


# --- checks made once ---------------------------------------------------------------------------

def _check_all(root: Path, folders: list[str], reuse: Reuse | None):
    out = []
    for folder in folders:
        job = Job(f"{folder}/attention.py::Attention", init={"n_embd": "C", "n_head": "H"},
                  inputs=["x=B,T,C"], causal=True, root=root,
                  reference="solution/attention.py::Attention")
        (target,) = job.resolve()
        out.append(job.check(target, reuse=reuse))
    return out


def test_identical_code_is_checked_once_and_reported_as_its_own(tmp_path, monkeypatch):
    students = {f"s{i}": BUGGY for i in range(3)} | {"solution": FIXED}
    course(tmp_path, students)
    monkeypatch.chdir(tmp_path)
    reuse = Reuse()
    reused = _check_all(tmp_path, ["s0", "s1", "s2"], reuse)
    fresh = _check_all(tmp_path, ["s0", "s1", "s2"], None)
    assert reuse.hits == 4  # s1 and s2: their behaviour checks and their comparison
    for a, b in zip(reused, fresh):
        assert [d.to_json() for d in a.diagnostics] == [d.to_json() for d in b.diagnostics]
        assert a.notes == b.notes and a.to_json()["checks"] == b.to_json()["checks"]
    assert {d.file for d in reused[2].diagnostics} == {"s2/attention.py"}
    assert any("reference-mismatch" == d.rule for d in reused[2].diagnostics)


def test_a_changed_file_is_checked_again(tmp_path, monkeypatch):
    course(tmp_path, {"s0": BUGGY, "s1": BUGGY + "\n# mine\n", "solution": FIXED})
    monkeypatch.chdir(tmp_path)
    reuse = Reuse()
    _check_all(tmp_path, ["s0", "s1"], reuse)
    assert reuse.hits == 0


BASE = """import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, dim, heads, steps):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
        self.register_buffer("mask", {mask})
"""
SUBCLASS = """import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from base import Base


class Decoder(Base):
    def forward(self, x, memory):
        return self.layer(x, memory, tgt_mask=self.mask)
"""


def test_a_constructor_in_another_file_is_part_of_what_is_reused(tmp_path, monkeypatch, capsys):
    """Two targets whose own files are byte for byte the same, whose base classes (in a
    sibling file, run only while building) make the causal mask two ways: each its own
    verdict. A float 0/1 triangle is added to the scores (+1 on the future) and hides nothing;
    -inf hides it."""
    masks = {"s0": "torch.triu(torch.ones(steps, steps), diagonal=1)",
             "s1": "torch.triu(torch.full((steps, steps), float('-inf')), diagonal=1)"}
    entries = []
    for folder, mask in masks.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "base.py").write_text(BASE.format(mask=mask))
        (tmp_path / folder / "decoder.py").write_text(SUBCLASS)
        entries.append(f'''
[[tool.shapetrace.targets]]
target = "{folder}/decoder.py::Decoder"
init = {{ dim = "C", heads = "H", steps = "T" }}
inputs = ["x=B,T,C", "memory=B,S,C"]
causal = true
''')
    (tmp_path / "pyproject.toml").write_text("[tool.shapetrace]\n" + "".join(entries))
    code, data = cli_json(tmp_path, monkeypatch, capsys)
    rules = {t["target"].split("/")[0]: [d["rule"] for d in t["diagnostics"]
                                         if d["severity"] == "error"] for t in data["targets"]}
    assert rules == {"s0": ["causal-leak"], "s1": []}, rules
    assert code == 1


def test_an_instance_is_never_reused():
    from models_basic import MHA

    from shapetrace.drive.check import check_target

    reuse = Reuse()
    model = MHA()  # its weights are its own: never taken for another's
    check_target(model, reuse=reuse)
    check_target(model, reuse=reuse)
    assert reuse.hits == 0


def test_the_shared_folder_carries_checks_to_another_process(tmp_path, monkeypatch):
    course(tmp_path, {"s0": BUGGY, "s1": BUGGY, "solution": FIXED})
    monkeypatch.chdir(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    _check_all(tmp_path, ["s0"], Reuse(shared=shared))
    other = Reuse(shared=shared)  # another worker, with nothing in memory
    (result,) = _check_all(tmp_path, ["s1"], other)
    assert other.hits == 2 and {d.file for d in result.diagnostics} == {"s1/attention.py"}


def test_notes_and_messages_name_this_copy(tmp_path, monkeypatch):
    course(tmp_path, {"s0": BUGGY, "s1": BUGGY, "solution": FIXED})
    monkeypatch.chdir(tmp_path)
    reuse = Reuse()
    first, second = _check_all(tmp_path, ["s0", "s1"], reuse)
    text = json.dumps(second.to_json())
    assert "s0/attention.py" not in text and "s1/attention.py" in text
