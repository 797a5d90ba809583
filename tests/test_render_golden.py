"""Rendered text, compared with golden files (width 100, no colour).

A change to the rendering shows up here as a diff. When the change is intended, regenerate the
files with ``pytest tests/test_render_golden.py --update-golden`` and review them in the diff.
"""

from __future__ import annotations

import difflib
import io
from pathlib import Path

import pytest

from models_basic import WrongKeyTranspose
from shapetrace.drive.check import check_target
from shapetrace.frontends.demo import CausalSelfAttention, JumbledSelfAttention
from shapetrace.render import make_console, print_report
from shapetrace.report.results import Report

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
WIDTH = 100


def _render(result) -> str:
    out = io.StringIO()
    console = make_console(color=False, width=WIDTH, file=out)
    print_report(Report([result]), console=console)
    return out.getvalue()


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n") + "\n"


CASES = [
    pytest.param(lambda: check_target(CausalSelfAttention,
                                      target="demo: CausalSelfAttention (correct)"),
                 "demo_correct.txt", id="demo-correct"),
    pytest.param(lambda: check_target(JumbledSelfAttention,
                                      target="demo: JumbledSelfAttention (one line wrong)"),
                 "demo_jumbled.txt", id="demo-jumbled"),
    pytest.param(lambda: check_target(WrongKeyTranspose, inputs=["x=B,T,C"],
                                      target="WrongKeyTranspose"),
                 "op_failed.txt", id="op-failed"),
]


@pytest.mark.parametrize("make, name", CASES)
def test_rendered_text_matches_golden(make, name, update_golden, monkeypatch):
    monkeypatch.chdir(REPO)  # file names in the report are relative to the working directory
    text = _normalise(_render(make()))
    path = GOLDEN / name
    if update_golden:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path} is missing: run pytest {Path(__file__).name} --update-golden")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{name}", "rendered"))
        pytest.fail(f"rendering changed (if intended: pytest --update-golden)\n{diff}",
                    pytrace=False)


@pytest.mark.parametrize("make, name", CASES)
def test_rendered_text_is_plain_and_fits(make, name, monkeypatch):
    monkeypatch.chdir(REPO)
    text = _render(make())
    assert "\x1b[" not in text
    assert [line for line in text.splitlines() if len(line) > WIDTH] == []


@pytest.mark.parametrize("name", ["demo_correct.txt", "demo_jumbled.txt", "op_failed.txt"])
def test_golden_files_say_what_they_show(name):
    """Guards against a golden file regenerated from a broken run (a crash, an empty report)."""
    text = (GOLDEN / name).read_text(encoding="utf-8")
    assert "could not run" not in text and "Traceback" not in text
    expected = {
        "demo_correct.txt": ["(B, T, 3*C)", "(B, H, T, d)", "(B, H, T, T)", "no problems found"],
        "demo_jumbled.txt": ["reshape-jumble", "(B, T, C) -> (B, H, T, d)", "hint:"],
        "op_failed.txt": ["op-failed", "(B, H, T, d)", "(B, T, H, d)", "raised RuntimeError",
                          "hint:"],
    }[name]
    assert [fragment for fragment in expected if fragment not in text] == []
