"""GitHub Actions workflow commands for every finding (SPEC sections 4 and 7).

The escaping follows the runner's rules; the CLI prints the commands on stdout after a text
report, or on stderr when stdout carries a JSON report; the plugin prints them once at the end
of the session, also under ``-n 2``. Without ``GITHUB_ACTIONS=true`` nothing is printed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shapetrace.render.github import (
    Annotation,
    annotations,
    diagnostic_command,
    escape_data,
    escape_property,
    github_actions,
    limited_commands,
    step_summary,
    workflow_command,
)
from shapetrace.report.results import Diagnostic, TargetResult
from test_pytest_plugin import BUGGY_LINE, REPO, RUNS, make_project, run

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("text, data, prop", [
    pytest.param("plain", "plain", "plain", id="plain"),
    pytest.param("50% done", "50%25 done", "50%25 done", id="percent"),
    pytest.param("a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac", id="newlines"),
    pytest.param("a:b,c", "a:b,c", "a%3Ab%2Cc", id="colon-comma"),
    pytest.param("%0A", "%250A", "%250A", id="escape-looking"),
])
def test_escaping(text, data, prop):
    assert escape_data(text) == data
    assert escape_property(text) == prop


@pytest.mark.parametrize("severity, level", [
    pytest.param("error", "error", id="error"),
    pytest.param("warning", "warning", id="warning"),
    pytest.param("info", "notice", id="info"),
])
def test_a_diagnostic_becomes_one_command(severity, level):
    d = Diagnostic(rule="softmax-axis", severity=severity, message="softmax over H, not T",
                   hint="use dim=-1", file="student/a,b.py", line=12, module="Attn")
    assert diagnostic_command(d) == (
        f"::{level} file=student/a%2Cb.py,line=12,title=shapetrace softmax-axis::"
        f"softmax over H, not T%0Ahint: use dim=-1%0A(in Attn)")


def test_user_text_cannot_end_the_command_or_start_another():
    d = Diagnostic(rule="op-failed", severity="error",
                   message="raised: bad\n::error::forged\x1b[31m 100%", file=None, line=None)
    command = diagnostic_command(d)
    assert "\n" not in command and "\x1b" not in command
    assert command.startswith("::error title=shapetrace op-failed::")
    assert command.splitlines() == [command]  # the forged one is not at a line's start
    assert "%0A::error::forged\\x1b[31m 100%25" in command


def test_a_target_that_could_not_run_is_one_error_at_its_file():
    result = TargetResult("student/attention.py::MHA", error="syntax error in student/attention.py:3")
    assert [a.command() for a in annotations([result])] == [
        "::error file=student/attention.py,title=shapetrace target-error::"
        "student/attention.py::MHA: syntax error in student/attention.py:3"]


def _students(n: int, level: str = "error", rule: str = "reshape-jumble", message: str = "m"):
    return [Annotation(level, rule, message, f"s{i}/a.py::M", file=f"s{i}/a.py", line=3)
            for i in range(n)]


@pytest.mark.parametrize("n", [pytest.param(10, id="ten"), pytest.param(16, id="sixteen")])
def test_at_most_ten_of_a_level_the_last_saying_how_many_more(n):
    commands = limited_commands(_students(n))
    assert len(commands) == 10
    if n > 10:
        assert commands[-1].startswith("::error title=shapetrace::")
        assert f"{n - 9} more errors not shown here" in commands[-1]
    else:
        assert all("file=s" in c for c in commands)


def test_each_level_has_its_own_ten_errors_first():
    found = [*_students(12, "notice", "dim-collision"), *_students(12, "warning", "attention-scale"),
             *_students(12)]
    commands = limited_commands(found)
    levels = [c.split(" ", 1)[0] for c in commands]
    assert levels == ["::error"] * 10 + ["::warning"] * 10 + ["::notice"] * 10


def test_one_per_root_cause_first():
    """Sixteen copies of one bug and one other bug: the other bug is among the ten shown."""
    found = [*_students(16), Annotation("error", "softmax-axis", "other", "z.py::M", "z.py", 7)]
    commands = limited_commands(found)
    assert any("softmax-axis" in c for c in commands[:2])


def test_step_summary_is_a_markdown_table_of_everything():
    found = [*_students(12), Annotation("warning", "attention-scale", "a | b\nc", "x.py::M",
                                        "x.py", 4)]
    text = step_summary(found)
    assert text.startswith("### shapetrace: 12 errors, 1 warning")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 13  # the header and every annotation
    assert "| x.py::M | warning attention-scale | x.py:4 | a \\| b c |" in text


def test_no_file_means_no_line_either():
    assert workflow_command("warning", "m", line=3) == "::warning::m"


@pytest.mark.parametrize("value, on", [("true", True), ("TRUE", True), ("", False),
                                       ("false", False), ("1", False)])
def test_github_actions_is_read_from_the_environment(monkeypatch, value, on):
    monkeypatch.setenv("GITHUB_ACTIONS", value)
    assert github_actions() is on


# --- the command line --------------------------------------------------------------------------

BUGGY = REPO / "examples" / "jumbled_heads" / "buggy.py"


def cli(*args: str, actions: bool) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    if actions:
        env["GITHUB_ACTIONS"] = "true"
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "shapetrace", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)


def commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("::")]


def test_cli_text_report_then_commands_on_stdout():
    done = cli("examples/jumbled_heads/buggy.py", "--no-trace", actions=True)
    assert done.returncode == 1
    found = commands(done.stdout)
    assert found and all(c.startswith("::error file=examples/jumbled_heads/buggy.py,line=")
                         for c in found)
    assert any("title=shapetrace reshape-jumble::" in c for c in found)
    assert done.stdout.index("::error") > done.stdout.index("reshape-jumble [ST001]")


def test_cli_json_on_stdout_stays_json_and_commands_go_to_stderr():
    done = cli("examples/jumbled_heads/buggy.py", "--format", "json", actions=True)
    report = json.loads(done.stdout)  # nothing else on stdout
    rules = {d["rule"] for t in report["targets"] for d in t["diagnostics"]}
    found = commands(done.stderr)
    assert "reshape-jumble" in rules and found
    assert {c.split("title=shapetrace ")[1].split("::")[0] for c in found} <= rules


def test_cli_prints_no_commands_outside_github_actions():
    done = cli("examples/jumbled_heads/buggy.py", "--no-trace", actions=False)
    assert not commands(done.stdout) and not commands(done.stderr)


# --- the plugin --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_plugin_prints_every_finding_once(pytester, monkeypatch, args):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    make_project(pytester, tests=BUGGY_TRACED, ini='pythonpath = ["."]')
    result = run(pytester, *args)
    found = commands(result.stdout.str())
    at_bug = [c for c in found if c.startswith(
        f"::error file=student/buggy.py,line={BUGGY_LINE},title=shapetrace reshape-jumble::")]
    assert len(at_bug) == 1  # the target and the traced test found the same bug: one annotation
    assert all("student/fixed.py" not in c for c in found)
    result.stdout.fnmatch_lines(["*shapetrace annotations (GitHub Actions)*"])


def test_plugin_prints_nothing_outside_github_actions(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    make_project(pytester)
    result = run(pytester)
    assert not commands(result.stdout.str())
    assert "annotations" not in result.stdout.str()


BUGGY_TRACED = '''
import pytest
import torch

from student.buggy import Attention


@pytest.mark.shapetrace
def test_traced():
    Attention(n_embd=143, n_head=11)(torch.randn(5, 7, 143))
'''
