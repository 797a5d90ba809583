"""Lecture-style scripts and notebook cells at the students' own sizes: exit codes as SPEC
section 4 says, loops folded, the notes' broadcasting pitfalls flagged at their lines, names
never guessed, and a script that needs what is not there (a module, input) told in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STUDENT = REPO / "tests" / "data" / "student"


def _run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "shapetrace", *args], capture_output=True,
                          text=True, env=env, input=stdin, cwd=REPO, timeout=300)


def _path(name: str) -> str:
    return str((STUDENT / name).relative_to(REPO))


@pytest.mark.parametrize(("name", "fragments"), [
    pytest.param("bow_script.py", ["x 4 iterations", "x 8 iterations", "(8, 8), (4, 8, 2)"],
                 id="bag-of-words"),
    pytest.param("qkv_script.py", ["(4, 8, 16), (4, 16, 8) → (4, 8, 8)", "F.softmax"],
                 id="qkv-walkthrough"),
    pytest.param("train_script.py", ["x 7 steps, 2 to 8", "AdamW.step", "opt.zero_grad"],
                 id="training-loop"),
    pytest.param("calls_exit.py", ["torch.randn"], id="bare-exit"),
])
def test_lecture_scripts_run_clean(name, fragments):
    done = _run(_path(name))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no problems found" in done.stdout
    for fragment in fragments:
        assert fragment in done.stdout
    for wrong in ("2*B", "→ (B", "→ (T", "C) →"):  # no --dims: the script's sizes are numbers
        assert wrong not in done.stdout


def test_dims_name_the_qkv_walkthrough():
    done = _run(_path("qkv_script.py"), "--dims", "B=4,T=8,C=32")
    assert done.returncode == 0
    assert "(B, T, C)" in done.stdout and "(B, T, T)" in done.stdout


def test_script_arguments_are_the_scripts_own():
    """sys.argv is [the file]: a script reading it runs as python file.py would (its prints go
    to stderr, so that they never mix with the report)."""
    done = _run(_path("qkv_script.py"))
    assert "torch.Size([4, 8, 16])" in done.stderr


def test_notes_broadcasting_pitfalls_flagged_at_their_lines():
    done = _run(_path("pitfalls_script.py"), "--no-trace")
    assert done.returncode == 1
    out = done.stdout
    assert "silent-broadcast [ST003]  tests/data/student/pitfalls_script.py:5" in out
    assert "reversed-transpose [ST002]  tests/data/student/pitfalls_script.py:6" in out
    assert ":3" not in out and ":4" not in out and ":7" not in out  # the legal matmuls, .mT


def test_module_with_main_block_is_checked_as_modules_and_as_a_script():
    as_modules = _run(_path("module_main.py"))
    assert as_modules.returncode == 0
    assert "module_main.py::Head" in as_modules.stdout and "(B, T, d)" in as_modules.stdout
    assert "torch.Size" not in as_modules.stdout  # the __main__ block does not run
    as_script = _run(_path("module_main.py"), "--script")
    assert as_script.returncode == 0
    assert "torch.Size([4, 8, 16])" in as_script.stderr
    assert "(4, 8, 32), (16, 32) → (4, 8, 16)" in as_script.stdout


@pytest.mark.parametrize(("name", "line"), [
    pytest.param("needs_matplotlib.py",
                 "the script could not import: No module named 'matplotlib'", id="missing-import"),
    pytest.param("asks_input.py", "the script asked for input (input() at line 3) and none was "
                 "given", id="input-without-stdin"),
    pytest.param("exits_1.py", "the script called exit(1)", id="exit-1"),
])
def test_a_script_that_cannot_run_is_exit_2_with_one_line(name, line):
    done = _run(_path(name))
    assert done.returncode == 2
    errors = [l for l in done.stderr.splitlines() if "shapetrace: error:" in l]
    assert len(errors) == 1 and line in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert "op-failed" not in done.stdout


def test_input_piped_in_reaches_the_script():
    done = _run(_path("asks_input.py"), stdin="alice\n")
    assert done.returncode == 0
    assert "alice" in done.stderr


# --- a notebook ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def executed():
    import nbformat
    import nbclient
    import ipykernel  # noqa: F401 - the kernel the notebook runs in (a test extra)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    nb = nbformat.read(STUDENT / "cells.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}}).execute()
    return nb


def _cell(nb, marker: str) -> tuple[str, str]:
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    data = [o.get("data", {}) for o in cell.outputs]
    return ("\n".join(d.get("text/plain", "") for d in data),
            "\n".join(d.get("text/html", "") for d in data))


def test_no_trace_cell_shows_findings_without_the_trace_in_text_and_html(executed):
    text, html = _cell(executed, "(no-trace)")
    assert "error reshape-jumble [ST001]" in text and "reshape-jumble" in html
    for shown in (text, html):
        assert "F.linear" not in shown and "torch.randn" not in shown


def test_cell_without_dims_prints_numbers(executed):
    text, _ = _cell(executed, "no --dims")
    assert "torch.randn          → (2, 10, 64)" in text
    assert "2*B" not in text and "(B," not in text


def test_module_defined_and_run_in_a_cell(executed):
    """Run at 8 tokens as wide as n_embd = 8: the cell's trace names nothing it cannot prove;
    the class is also checked at the probe sizes, where every axis has its name."""
    text, _ = _cell(executed, "class StudentAttention")
    cell, _, probe = text.partition("StudentAttention   B=5")
    assert "(3, 8, 8)" in cell and " C" not in cell.split("✓")[0].split("torch.randn")[1]
    assert "(B, H, T, d)" in probe
    assert "error" not in text


def test_cell_with_a_failed_import_says_so_in_one_line(executed):
    text, _ = _cell(executed, "matplotlib_not_installed_here")
    assert "could not run: the cell could not import: No module named" in text
