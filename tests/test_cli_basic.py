"""The command line: the demo, FILE::Name with --format json, exit codes, --help and --rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import shapetrace
from models_basic import line_of
from shapetrace.frontends.cli import main
from shapetrace.rules.registry import RULES

REPO = Path(__file__).resolve().parent.parent
MODELS = "tests/models_basic.py"
ATTENTION_ARGS = ["--init", "n_embd=C,n_head=H", "--input", "x=B,T,C", "--dims", "T=29"]


@pytest.fixture
def in_repo(monkeypatch):
    """Run from the repository root, so targets and reported files are short relative paths."""
    monkeypatch.chdir(REPO)


def _long_lines(text: str, width: int = 100) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


# --- the demo ---------------------------------------------------------------------------------

def test_demo_in_process_shows_both_modules_and_fits_the_width(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "150")  # --width wins over the environment
    assert main(["--width", "100"]) == 0
    out = capsys.readouterr().out
    assert "demo: CausalSelfAttention (correct)" in out
    assert "demo: JumbledSelfAttention (one line wrong)" in out
    assert "reshape-jumble" in out
    assert "(B, T, C) -> (B, H, T, d)" in out
    assert _long_lines(out) == []
    assert max(len(line) for line in out.splitlines()) > 80  # the width was used, not a default


def test_demo_as_a_program(tmp_path):
    env = {**os.environ, "COLUMNS": "100"}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run([sys.executable, "-m", "shapetrace"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert "CausalSelfAttention" in out and "JumbledSelfAttention" in out
    jumbled = out[out.index("JumbledSelfAttention (one line wrong)"):]
    correct = out[:out.index("JumbledSelfAttention (one line wrong)")]
    assert "reshape-jumble" in jumbled
    assert "reshape-jumble" not in correct
    assert _long_lines(out) == []
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal


# --- FILE::Name --format json ------------------------------------------------------------------

TARGET_KEYS = {"target", "ok", "error", "dims", "diagnostics", "trace"}
DIAGNOSTIC_KEYS = {"rule", "code", "severity", "message", "hint", "file", "line", "module", "op"}
TRACE_KEYS = {"op", "module", "file", "line", "inputs", "outputs"}


def _json_run(capsys, target: str, *extra: str) -> tuple[int, dict]:
    code = main([f"{MODELS}::{target}", *ATTENTION_ARGS, *extra, "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


@pytest.mark.parametrize("target, code, ok", [
    pytest.param("MergeWithoutTranspose", 1, False, id="buggy-exits-1"),
    pytest.param("MHA", 0, True, id="correct-exits-0"),
])
def test_json_report_has_the_spec_keys(capsys, in_repo, target, code, ok):
    exit_code, report = _json_run(capsys, target)
    assert exit_code == code
    assert set(report) == {"shapetrace", "targets"}
    assert report["shapetrace"] == shapetrace.__version__
    [result] = report["targets"]
    assert TARGET_KEYS <= set(result)
    assert result["target"] == f"{MODELS}::{target}"
    assert result["ok"] is ok
    assert result["error"] is None
    assert result["dims"]["T"] == 29
    assert {k: result["dims"][k] for k in ("B", "H", "d", "C")} == \
        {"B": 5, "H": 11, "d": 13, "C": 143}
    assert [dg for dg in result["diagnostics"] if not DIAGNOSTIC_KEYS <= set(dg)] == []
    assert result["trace"]
    assert [item for item in result["trace"] if not TRACE_KEYS <= set(item)] == []
    shapes = [s for item in result["trace"] for s in item["inputs"] + item["outputs"]]
    assert [s for s in shapes if not (isinstance(s, str) and s.startswith("("))] == []
    first = result["trace"][0]
    assert first == {**first, "op": "F.linear", "module": f"{target}.c_attn", "file": MODELS,
                     "inputs": ["(B, T, C)", "(3*C, C)", "(3*C,)"], "outputs": ["(B, T, 3*C)"]}


def test_json_diagnostic_points_at_the_buggy_line(capsys, in_repo):
    _, report = _json_run(capsys, "MergeWithoutTranspose")
    errors = [dg for dg in report["targets"][0]["diagnostics"] if dg["severity"] == "error"]
    jumble = next(dg for dg in errors if dg["rule"] == "reshape-jumble")
    assert jumble == {**jumble, "code": "ST001", "file": MODELS, "line": line_of("merge-jumble"),
                      "module": "MergeWithoutTranspose", "op": "Tensor.reshape"}
    assert "(B, H, T, d) -> (B, T, C)" in jumble["message"]
    assert ".transpose(1, 2)" in jumble["hint"]


def test_json_for_a_whole_file_has_one_target_per_module(capsys, in_repo):
    import inspect

    import models_basic
    from torch import nn

    defined = [name for name, obj in vars(models_basic).items() if inspect.isclass(obj)
               and issubclass(obj, nn.Module) and obj.__module__ == models_basic.__name__]
    code = main([MODELS, "--format", "json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert [t["target"] for t in report["targets"]] == [f"{MODELS}::{name}" for name in defined]
    by_name = {t["target"].split("::")[1]: t for t in report["targets"]}
    assert by_name["MHA"]["ok"] and not by_name["MergeWithoutTranspose"]["ok"]
    unbuilt = [t["target"] for t in report["targets"] if t["error"]]
    # modules that cannot run are reported, not skipped
    assert f"{MODELS}::RaisesInForward" in unbuilt
    # forward(self, y) with ``B, H, T, d = y.shape``: y read as its unpacking names it
    assert by_name["TransposeReshape"]["ok"] and by_name["TransposeReshape"]["error"] is None
    assert code == 2
    assert len(captured.err.strip().splitlines()) == len(unbuilt)


def test_text_report_fits_the_width_and_names_the_line(capsys, in_repo):
    code = main([f"{MODELS}::MergeWithoutTranspose", *ATTENTION_ARGS, "--width", "100"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"{MODELS}:{line_of('merge-jumble')}" in out
    assert "reshape-jumble" in out and "(B, H, T, d) -> (B, T, C)" in out
    assert _long_lines(out) == []
    assert "\x1b[" not in out


# --- exit 2: one line on stderr, no traceback ----------------------------------------------

@pytest.mark.parametrize("argv, fragment", [
    pytest.param(["no/such/file.py"], "no/such/file.py", id="missing-file"),
    pytest.param([f"{MODELS}::NoSuchClass"], "NoSuchClass", id="missing-class"),
    pytest.param([f"{MODELS}::MHA", "--format", "xml"], "xml", id="unknown-format"),
    pytest.param([f"{MODELS}::MHA", "--dims", "T=seven"], "T", id="bad-dims"),
    pytest.param([f"{MODELS}::MHA", "--input", "x=B,Q,C"], "Q", id="unknown-dim-in-input"),
])
def test_unusable_command_exits_2_with_one_line(capsys, in_repo, argv, fragment):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("shapetrace: error: ")
    assert fragment in lines[0]
    assert "Traceback" not in captured.err + captured.out


def test_missing_file_as_a_program_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "shapetrace", "missing.py", "--format", "json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "missing.py" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- --help, --version and --rules do not import torch ----------------------------------------

_NO_TORCH = textwrap.dedent("""
    import contextlib, io, sys
    import shapetrace.frontends.cli as cli
    out = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out):
        try:
            code = cli.main({argv!r})
        except SystemExit as exc:
            code = exc.code
    assert "torch" not in sys.modules, "torch was imported"
    sys.stdout.write(out.getvalue())
    sys.exit(code or 0)
""")


@pytest.mark.parametrize("argv, expected", [
    pytest.param(["--help"], ["usage: shapetrace", "--init", "--input", "--dims", "--format",
                              "exit codes"], id="help"),
    pytest.param(["--version"], [f"shapetrace {shapetrace.__version__}"], id="version"),
    pytest.param(["--rules", "--width", "100"], list(RULES), id="rules"),
])
def test_without_importing_torch(argv, expected):
    proc = subprocess.run([sys.executable, "-c", _NO_TORCH.format(argv=argv)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [text for text in expected if text not in proc.stdout] == [], proc.stdout


def test_help_as_a_program_does_not_import_torch():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "shapetrace", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()]
    assert "torch" not in imported
    assert "usage: shapetrace" in proc.stdout


def test_rules_lists_every_rule(capsys):
    assert len(RULES) >= 15
    assert main(["--rules", "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert [r.name for r in RULES.values() if r.name not in out or r.code not in out] == []
    assert _long_lines(out) == []


def test_rules_as_json(capsys):
    assert main(["--rules", "--format", "json"]) == 0
    rules = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in rules] == [r.code for r in RULES.values()]
    assert [r["code"] for r in rules][:15] == [f"ST{i:03d}" for i in range(1, 16)]
    assert [r["rule"] for r in rules] == list(RULES)
    assert {r["severity"] for r in rules} <= {"error", "warning", "info"}
