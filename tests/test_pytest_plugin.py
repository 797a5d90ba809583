"""The pytest plugin, run the way course CI runs it: pytest in a project with targets.

Each test writes a small project with ``pytester`` and runs pytest on it in a subprocess, as CI
does: an in-process run drops the modules it imported when it ends, and torch cannot be imported
a second time into one process.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]

ATTENTION = '''
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = {split}
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = F.softmax(q @ k.transpose(-2, -1) * k.size(-1) ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)
'''
RIGHT_SPLIT = "q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)"
JUMBLED_SPLIT = "q.reshape(B, self.n_head, T, C // self.n_head)  # the bug"
BUGGY_LINE = 16  # the line of {split} in ATTENTION as written to a file

PYPROJECT = '''
[tool.pytest.ini_options]
{ini}

[tool.shapetrace]
{settings}
{targets}
'''
TARGET = '''
[[tool.shapetrace.targets]]
target = "{target}"
init = {{ n_embd = "C", n_head = "H" }}
inputs = ["x=B,T,C"]
causal = false
'''

TRACED_TESTS = '''
import pytest
import torch

from student.buggy import Attention as Buggy
from student.fixed import Attention as Fixed

# built here, so that a traced test records forward passes, not constructors
BUGGY = Buggy(n_embd=143, n_head=11)
FIXED = Fixed(n_embd=143, n_head=11)


def run(model):
    x = torch.randn(5, 7, 143)
    assert model(x).shape == x.shape


@pytest.mark.shapetrace
def test_marked_buggy():
    run(BUGGY)


@pytest.mark.shapetrace(dims={"B": 5})
def test_marked_fixed():
    run(FIXED)


def test_unmarked_buggy():
    run(BUGGY)


def test_fixture_buggy(shapetrace):
    model = Buggy(n_embd=shapetrace.dims["C"], n_head=shapetrace.dims["H"])
    x = shapetrace.input("x=B,T,C")
    model(x)  # outside the traced block: not checked
    with shapetrace.trace(model):
        model(x)


def test_fixture_check_fixed(shapetrace):
    report = shapetrace.check(Fixed, init={"n_embd": "C", "n_head": "H"})
    assert report.ok
'''


def make_project(pytester: pytest.Pytester, targets=("student/buggy.py", "student/fixed.py"),
                 ini: str = "", tests: str | None = None, settings: str = "") -> None:
    """A course repository: a buggy and a fixed student file, targets in pyproject.toml."""
    student = pytester.mkpydir("student")
    (student / "buggy.py").write_text(ATTENTION.format(split=JUMBLED_SPLIT))
    (student / "fixed.py").write_text(ATTENTION.format(split=RIGHT_SPLIT))
    entries = "".join(TARGET.format(target=t) for t in targets)
    pytester.makepyprojecttoml(PYPROJECT.format(ini=ini, settings=settings, targets=entries))
    if tests is not None:
        pytester.makepyfile(test_course=tests)


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    """nodeid -> PASSED/FAILED/ERROR, read from ``-rA``'s short summary."""
    found = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " "):
                found[line[len(word) + 1:].split(" - ")[0].strip()] = word
    return found


BUGGY_TARGET = "shapetrace::student/buggy.py::Attention"
FIXED_TARGET = "shapetrace::student/fixed.py::Attention"

RUNS = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]


def run(pytester: pytest.Pytester, *args: str, cache: bool = False) -> pytest.RunResult:
    cacheprovider = "cacheprovider" if cache else "no:cacheprovider"
    return pytester.runpytest_subprocess("-rA", "-p", cacheprovider, *args)


# --- targets -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_targets_pass_and_fail(pytester, args):
    make_project(pytester)
    result = run(pytester, *args)
    assert outcomes(result) == {BUGGY_TARGET: "FAILED", FIXED_TARGET: "PASSED"}
    out = result.stdout.str()
    # the failure message: what, where, how to fix; then the trace section
    result.stdout.fnmatch_lines([
        f"*_ {BUGGY_TARGET} _*",
        f"*shapetrace found 1 error: reshape-jumble at student/buggy.py:{BUGGY_LINE}*",
        f"*error reshape-jumble*student/buggy.py:{BUGGY_LINE}*",
        "*hint:*",
        "*- shapetrace trace -*",
        "*student/buggy.py::Attention*B=5 T=7*",
        f"*{BUGGY_LINE} Tensor.reshape*(B, T, C) → (B, H, T, d)*",
    ])
    assert "Traceback" not in out and "_pytest" not in out
    assert "\x1b[" not in out  # no colour codes in CI logs
    result.assert_outcomes(passed=1, failed=1)


def test_report_header_names_probe_sizes(pytester):
    make_project(pytester)
    result = run(pytester, "--co")
    result.stdout.fnmatch_lines([
        "shapetrace *: probe sizes B=5 T=7 S=17 H=11 d=13 C=143 V=19 L=23; "
        "2 targets from pyproject.toml",
        "<ShapetraceTargets shapetrace>",
        "  <ShapetraceTargetGroup student/buggy.py>",
        "    <ShapetraceItem Attention>",
        "  <ShapetraceTargetGroup student/fixed.py>",
        "    <ShapetraceItem Attention>",
    ])


def test_a_file_with_several_modules_gives_one_item_each(pytester):
    make_project(pytester, targets=("student/both.py",))
    (pytester.path / "student" / "both.py").write_text(
        ATTENTION.format(split=RIGHT_SPLIT) + "\n\nclass Twin(Attention):\n    pass\n")
    result = run(pytester)
    assert outcomes(result) == {"shapetrace::student/both.py::Attention": "PASSED",
                                "shapetrace::student/both.py::Twin": "PASSED"}


@pytest.mark.parametrize("target, message", [
    pytest.param("student/missing.py", "no such file: student/missing.py", id="missing-file"),
    pytest.param("student/broken.py", "syntax error in student/broken.py:1: expected ':'",
                 id="syntax-error"),
    pytest.param("student/fixed.py::Atention", "no class 'Atention' in student/fixed.py*",
                 id="misspelt-class"),
])
def test_a_target_that_cannot_be_resolved_fails_with_one_line(pytester, target, message):
    make_project(pytester, targets=(target, "student/fixed.py"))
    (pytester.path / "student" / "broken.py").write_text("def forward(x)\n    return x\n")
    result = run(pytester)
    assert outcomes(result) == {f"shapetrace::{target}": "FAILED", FIXED_TARGET: "PASSED"}
    result.stdout.fnmatch_lines([f"shapetrace could not run {target}: {message}"])
    assert "Traceback" not in result.stdout.str()


def test_a_target_that_cannot_be_built_fails_with_one_line(pytester):
    make_project(pytester, targets=("student/picky.py",))
    (pytester.path / "student" / "picky.py").write_text(textwrap.dedent('''
        import torch.nn as nn

        class Picky(nn.Module):
            def __init__(self, n_embd, n_head):
                super().__init__()
                raise ValueError("n_embd must be a power of two")
    '''))
    result = run(pytester)
    assert outcomes(result) == {"shapetrace::student/picky.py::Picky": "FAILED"}
    result.stdout.fnmatch_lines([
        "shapetrace could not run student/picky.py::Picky: Picky(n_embd=143, n_head=11) raised "
        "ValueError: n_embd must be a power of two at student/picky.py:7"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("args", RUNS)
def test_a_broken_config_fails_its_own_item_only(pytester, args):
    make_project(pytester, tests="def test_plain():\n    pass\n")
    pytester.makepyprojecttoml("[tool.shapetrace]\n[[tool.shapetrace.targets]]\ntraget = 'x.py'\n")
    result = run(pytester, *args)
    assert outcomes(result) == {"shapetrace::pyproject.toml": "FAILED",
                                "test_course.py::test_plain": "PASSED"}
    result.stdout.fnmatch_lines([
        "shapetrace could not run the shapetrace config: pyproject.toml: "
        "tool.shapetrace.targets[[]0] has no 'target' key*"])
    assert "Traceback" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_shapetrace_toml_is_read_too(pytester):
    make_project(pytester)
    (pytester.path / "pyproject.toml").unlink()
    pytester.makefile(".toml", shapetrace=TARGET.replace("tool.shapetrace.", "").format(
        target="student/buggy.py"))
    result = run(pytester)
    assert outcomes(result) == {BUGGY_TARGET: "FAILED"}


@pytest.mark.parametrize("config", [
    pytest.param("[tool.shapetrace]\ndims = { B = 3 }\n", id="no-targets"),
    pytest.param("[project]\nname = 'course'\ndependencies = ['shapetrace']\n", id="no-table"),
    pytest.param(None, id="no-pyproject"),
])
def test_no_targets_is_not_an_error(pytester, config):
    if config is not None:
        pytester.makepyprojecttoml(config)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = run(pytester)
    assert outcomes(result) == {"test_plain.py::test_plain": "PASSED"}
    assert "shapetrace::" not in result.stdout.str()


def test_selecting_runs(pytester):
    make_project(pytester, tests="def test_plain():\n    pass\n")
    everything = {BUGGY_TARGET: "FAILED", FIXED_TARGET: "PASSED",
                  "test_course.py::test_plain": "PASSED"}
    assert outcomes(run(pytester)) == everything
    assert outcomes(run(pytester, ".")) == everything
    # naming a test file narrows the run to it; naming the config file runs only the targets
    assert outcomes(run(pytester, "test_course.py")) == {"test_course.py::test_plain": "PASSED"}
    only_targets = {BUGGY_TARGET: "FAILED", FIXED_TARGET: "PASSED"}
    assert outcomes(run(pytester, "pyproject.toml")) == only_targets
    assert outcomes(run(pytester, "-m", "shapetrace")) == only_targets
    assert outcomes(run(pytester, "-k", "fixed")) == {FIXED_TARGET: "PASSED"}
    assert outcomes(run(pytester, "--deselect", BUGGY_TARGET, "-m", "shapetrace")) == {
        FIXED_TARGET: "PASSED"}


def test_last_failed_reruns_failed_targets(pytester):
    make_project(pytester, tests="def test_plain():\n    pass\n")
    assert outcomes(run(pytester, cache=True))[BUGGY_TARGET] == "FAILED"
    assert outcomes(run(pytester, "--lf", cache=True)) == {BUGGY_TARGET: "FAILED"}


def test_last_failed_reruns_only_the_failed_test(pytester):
    """``pytest --lf`` under this repository's own pytest settings (pyproject.toml's
    [tool.pytest.ini_options], which must leave the cache provider on), the plugin loaded: the
    second run reruns only the test that failed in the first."""
    import tomllib

    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    ini = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings["ini_options"].items())
    pytester.makepyprojecttoml(f"[tool.pytest.ini_options]\n{ini}")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_project.py").write_text(
        "def test_passes():\n    pass\n\n\ndef test_fails():\n    assert False\n")
    first = pytester.runpytest_subprocess("-rA")
    assert outcomes(first) == {"tests/test_project.py::test_passes": "PASSED",
                               "tests/test_project.py::test_fails": "FAILED"}
    again = pytester.runpytest_subprocess("-rA", "--lf")
    assert outcomes(again) == {"tests/test_project.py::test_fails": "FAILED"}
    again.stdout.fnmatch_lines(["*run-last-failure: rerun previous 1 failure*"])


# --- traced tests ------------------------------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_marked_tests_and_the_fixture(pytester, args):
    make_project(pytester, targets=(), tests=TRACED_TESTS, ini='pythonpath = ["."]')
    result = run(pytester, *args)
    assert outcomes(result) == {
        "test_course.py::test_marked_buggy": "FAILED",
        "test_course.py::test_marked_fixed": "PASSED",
        "test_course.py::test_unmarked_buggy": "PASSED",
        "test_course.py::test_fixture_buggy": "FAILED",
        "test_course.py::test_fixture_check_fixed": "PASSED",
    }
    # Each failure report in its own order; under xdist the two may come in either order.
    for name, header in (("test_marked_buggy", "test_course.py::test_marked_buggy   B=5 T=7*"),
                         ("test_fixture_buggy",
                          "test_course.py::test_fixture_buggy [[]Attention[]]   B=5*")):
        result.stdout.fnmatch_lines([
            f"*_ {name} _*",
            # one finding: for the fixture, the call outside ``shapetrace.trace`` is not recorded
            f"shapetrace found 1 error: reshape-jumble at student/buggy.py:{BUGGY_LINE}",
            "*- shapetrace trace -*",
            header,
        ])


@pytest.mark.parametrize("args, ini", [
    pytest.param(("--shapetrace",), "", id="option"),
    pytest.param((), "shapetrace = true", id="ini"),
])
def test_tracing_every_test(pytester, args, ini):
    make_project(pytester, targets=(), tests=TRACED_TESTS, ini=f'pythonpath = ["."]\n{ini}')
    pytester.makepyfile(test_other='''
        import pytest
        import torch

        def test_no_torch_at_all():
            assert 1 + 1 == 2

        def test_caught_op_error_is_fine():
            with pytest.raises(RuntimeError):
                torch.randn(2, 3).transpose(0, 1).view(6)
    ''')
    result = run(pytester, *args)
    assert outcomes(result) == {
        "test_course.py::test_marked_buggy": "FAILED",
        "test_course.py::test_marked_fixed": "PASSED",
        "test_course.py::test_unmarked_buggy": "FAILED",
        "test_course.py::test_fixture_buggy": "FAILED",
        "test_course.py::test_fixture_check_fixed": "PASSED",
        "test_other.py::test_no_torch_at_all": "PASSED",
        "test_other.py::test_caught_op_error_is_fine": "PASSED",
    }
    result.stdout.fnmatch_lines(["shapetrace *: probe sizes B=5 *; tracing every test"])


def test_a_test_failing_by_itself_shows_the_trace_too(pytester):
    make_project(pytester, targets=(), ini='pythonpath = ["."]', tests='''
        import pytest
        import torch
        from student.fixed import Attention

        MODEL = Attention(143, 11)

        @pytest.mark.shapetrace
        def test_wrong_expectation():
            y = MODEL(torch.randn(5, 7, 143))
            assert y.shape == (5, 7, 11)
    ''')
    result = run(pytester)
    result.stdout.fnmatch_lines([
        "E       assert torch.Size([[]5, 7, 143[]]) == (5, 7, 11)*",
        "*- shapetrace -*",
        "*test_course.py::test_wrong_expectation*B=5*",
        "*F.linear*(B, T, C) → (B, T, 3*C)*",
        "*✓ no problems found*",
    ])


@pytest.mark.parametrize("marker, message", [
    pytest.param("shapetrace(dims=5)", "dims=...) must be a dict*", id="dims-not-a-dict"),
    pytest.param("shapetrace(casual=True)", "*takes only dims= and causal=, got casual", id="typo"),
    pytest.param("shapetrace(dims={'B': 0})", "*dimension B must be a positive size, got 0",
                 id="bad-size"),
])
def test_marker_mistakes_fail_with_one_line(pytester, marker, message):
    pytester.makepyfile(test_marked=f'''
        import pytest

        @pytest.mark.{marker}
        def test_it():
            pass
    ''')
    result = run(pytester)
    assert outcomes(result) == {"test_marked.py::test_it": "FAILED"}
    result.stdout.fnmatch_lines([f"*shapetrace*{message}"])
    assert "Traceback" not in result.stdout.str()


def test_marker_dims_and_config_dims_name_the_axes(pytester):
    make_project(pytester, targets=(), settings="dims = { B = 3 }", tests='''
        import pytest

        @pytest.mark.shapetrace(dims={"d": 8})
        def test_sizes(shapetrace):
            assert dict(shapetrace.dims)["B"] == 3      # from [tool.shapetrace] dims
            assert shapetrace.dims["C"] == 11 * 8       # H * d, d from the marker
            assert tuple(shapetrace.input("B,T,C").shape) == (3, 7, 88)
            assert shapetrace.input("idx=B,T:long:V").dtype.is_floating_point is False
    ''')
    result = run(pytester)
    assert outcomes(result) == {"test_course.py::test_sizes": "PASSED"}


# --- the report file ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_json_report_has_every_target_and_traced_test(pytester, args):
    make_project(pytester, tests=TRACED_TESTS, ini='pythonpath = ["."]')
    result = run(pytester, "--shapetrace-report=out/report.json", *args)
    result.stdout.fnmatch_lines(["*shapetrace report (6 results): *report.json*"])
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    entries = {(e["test"], e["target"]): e for e in data["targets"]}
    assert set(entries) == {
        (BUGGY_TARGET, "student/buggy.py::Attention"),
        (FIXED_TARGET, "student/fixed.py::Attention"),
        ("test_course.py::test_marked_buggy",) * 2,
        ("test_course.py::test_marked_fixed",) * 2,
        ("test_course.py::test_fixture_buggy", "test_course.py::test_fixture_buggy [Attention]"),
        ("test_course.py::test_fixture_check_fixed", "Attention"),
        # test_unmarked_buggy is not traced
    }
    assert data["shapetrace"]
    buggy = entries[BUGGY_TARGET, "student/buggy.py::Attention"]
    assert buggy["ok"] is False and buggy["error"] is None
    assert [d["rule"] for d in buggy["diagnostics"]] == ["reshape-jumble"]
    assert buggy["diagnostics"][0]["line"] == BUGGY_LINE
    assert buggy["trace"][0]["op"] == "F.linear"
    assert [e["ok"] for e in data["targets"] if "fixed" in e["test"]] == [True, True, True]
    assert all("_html" not in e for e in data["targets"])


def test_html_report_and_ini_option(pytester):
    make_project(pytester, targets=("student/buggy.py", "student/fixed.py", "student/missing.py"),
                 ini='shapetrace_report = "report.html"')
    result = run(pytester, "-n", "2")
    assert outcomes(result)[BUGGY_TARGET] == "FAILED"
    page = (pytester.path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "3 checked: 2 failed, 1 passed" in page
    for name in ("student/buggy.py::Attention", "student/fixed.py::Attention", "student/missing.py"):
        assert name in page
    assert "reshape-jumble" in page and "no such file: student/missing.py" in page
    assert "style=" in page  # coloured like the terminal


LOOPING_TESTS = '''
import gc
import weakref

import torch
import torch.nn.functional as F

from student.fixed import Attention

TRACES = []


def test_training_loop(shapetrace):
    torch.manual_seed(0)
    model = Attention(n_embd=143, n_head=11)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 7, 143)
    with shapetrace.trace(model) as t:
        for _ in range(40):
            loss = F.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            opt.step()
    TRACES.append(weakref.ref(t))


def test_the_trace_was_released_with_its_report():
    gc.collect()
    assert TRACES and TRACES[0]() is None
'''


def test_records_are_released_and_long_traces_fold_in_the_report(pytester):
    make_project(pytester, targets=(), tests=LOOPING_TESTS, ini='pythonpath = ["."]')
    result = run(pytester, "-p", "no:randomly", "--shapetrace-report=report.json")
    assert outcomes(result) == {"test_course.py::test_training_loop": "PASSED",
                                "test_course.py::test_the_trace_was_released_with_its_report":
                                    "PASSED"}
    entry, = json.loads((pytester.path / "report.json").read_text())["targets"]
    steps = entry["steps"]  # the trace counted its repeated steps and kept one of each kind
    assert steps["count"] == 40 and sum(kind["count"] for kind in steps["kept"]) == 40
    start, end = steps["kept"][-1]["records"]
    assert end - start < len(entry["trace"]) < 3 * (end - start)  # one step shown, not forty


@pytest.mark.parametrize("sigs, runs", [
    pytest.param([1, 2, 3], [(0, 3, 3, 0)], id="no-repeat"),
    pytest.param([7] * 60, [(0, 60, 1, 59)], id="one-op-repeated"),
    pytest.param([9] + [1, 2, 3] * 30 + [8], [(0, 1, 1, 0), (1, 91, 3, 29), (91, 92, 1, 0)],
                 id="steps-between-setup-and-teardown"),
    pytest.param([1, 2] * 3, [(0, 6, 6, 0)], id="too-short-to-fold"),
    pytest.param([1, 2, 3] * 20 + [1, 2, 4] + [1, 2, 3] * 20,
                 [(0, 60, 3, 19), (60, 63, 3, 0), (63, 123, 3, 19)], id="a-different-step-stays"),
])
def test_repeated_steps_are_found(sigs, runs):
    from shapetrace.frontends.pytest_outputs import _runs

    found = list(_runs(sigs))
    assert found == runs
    assert sum(stop - start for start, stop, _, _ in found) == len(sigs)  # covers everything


def test_report_file_must_have_a_known_suffix(pytester):
    result = run(pytester, "--shapetrace-report=report.pdf")
    result.stderr.fnmatch_lines(["*--shapetrace-report report.pdf: cannot tell the report format "
                                 "from the suffix '.pdf': use one of text (.txt*json (.json)*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# --- staying out of the way --------------------------------------------------------------------

def test_importing_the_plugin_does_not_import_torch(pytester):
    code = ("import sys, shapetrace.frontends.pytest_plugin; "
            "print(sorted(m for m in ('torch', 'rich') if m in sys.modules))")
    result = pytester.run(sys.executable, "-c", code)
    assert result.outlines[-1] == "[]"


def test_a_session_without_shapetrace_does_not_import_torch(pytester):
    pytester.makeconftest('''
        import sys

        def pytest_sessionfinish(session):
            print("\\nimported torch:", "torch" in sys.modules)
    ''')
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = run(pytester, "-s")
    result.stdout.fnmatch_lines(["*plugins:*shapetrace*", "imported torch: False"])


@pytest.mark.parametrize("args", [pytest.param((), id="plain"),
                                  pytest.param(("--shapetrace",), id="tracing")])
def test_assertion_rewriting_still_works(pytester, args):
    make_project(pytester, tests='''
        def test_compare():
            x = 1
            assert x == 2
    ''')
    result = run(pytester, *args)
    result.stdout.fnmatch_lines(["E       assert 1 == 2"])


# --- the course template -----------------------------------------------------------------------

def copy_course_template(destination: Path) -> None:
    """The course template as an instructor copies it."""
    shutil.copytree(REPO / "examples" / "course", destination, dirs_exist_ok=True)


def test_course_template_as_an_instructor_runs_it(pytester):
    copy_course_template(pytester.path)
    result = run(pytester)
    found = outcomes(result)
    assert found["shapetrace::student/attention.py::MultiHeadAttention"] == "FAILED"
    assert found["shapetrace::student/attention_fixed.py::MultiHeadAttention"] == "PASSED"
    result.stdout.fnmatch_lines(["*reshape-jumble at student/attention.py:*"])
    workflow = (pytester.path / ".github" / "workflows" / "shapetrace.yml").read_text()
    assert "pytest" in workflow and "download.pytorch.org/whl/cpu" in workflow
    assert "--shapetrace-gradescope=" in workflow and "GITHUB_ACTIONS" in workflow
