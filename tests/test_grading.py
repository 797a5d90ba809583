"""Grading: Gradescope's results.json from ``--shapetrace-gradescope``, the course template's
``run_autograder``, and the template's verdicts (correct, buggy, different from the reference).

Run in subprocesses with ``pytester``, serial and under ``-n 2``, like ``test_pytest_plugin``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from shapetrace.frontends.gradescope import gradescope_test, mark_failed, results_document
from test_pytest_plugin import (BUGGY_LINE, BUGGY_TARGET, FIXED_TARGET, REPO, RUNS, TRACED_TESTS,
                                copy_course_template, make_project, outcomes, run)

pytest_plugins = ["pytester"]


def gradescope(pytester, *args) -> tuple[pytest.RunResult, dict]:
    result = run(pytester, "--shapetrace-gradescope=results/results.json", *args)
    return result, json.loads((pytester.path / "results" / "results.json").read_text())


def by_name(document: dict) -> dict[str, dict]:
    return {t["name"]: t for t in document["tests"]}


# --- results.json, plain data ------------------------------------------------------------------

@pytest.mark.parametrize("passed, points, score, status", [
    pytest.param(True, 1, 1.0, "passed", id="passed"),
    pytest.param(False, 1, 0.0, "failed", id="failed"),
    pytest.param(True, 2.5, 2.5, "passed", id="points"),
    pytest.param(False, 3, 0.0, "failed", id="points-failed"),
])
def test_a_test_scores_all_or_nothing(passed, points, score, status):
    test = gradescope_test("shapetrace::a.py::A", passed=passed, points=points, output="x")
    assert test == {"name": "shapetrace::a.py::A", "score": score, "max_score": float(points),
                    "status": status, "output": "```\nx\n```", "output_format": "md"}


def test_output_is_a_code_block_that_user_text_cannot_close():
    """Gradescope renders Markdown: the findings sit in a code block (fixed-width, so shapes
    line up), fenced with more backticks than any run in the text."""
    test = gradescope_test("a", passed=False, output="x = `y`\n```\nnot code")
    assert test["output"].startswith("````\n") and test["output"].endswith("\n````")


def test_the_document_totals_the_scores():
    tests = [gradescope_test("a", passed=True, points=2), gradescope_test("b", passed=False),
             mark_failed(gradescope_test("c", passed=True), "teardown failed")]
    document = results_document(tests)
    assert document["score"] == 2.0
    assert document["output"] == "shapetrace: 1 of 3 checks passed (2 of 4 points)"
    assert [t["status"] for t in document["tests"]] == ["passed", "failed", "failed"]
    assert document["tests"][2]["output"] == "```\nteardown failed\n```"
    json.dumps(document, allow_nan=False)  # strict JSON


def test_long_output_is_cut():
    test = gradescope_test("a", passed=False, output="x" * 50_000)
    assert len(test["output"]) < 21_000 and test["output"].endswith("more characters)\n```")


@pytest.mark.parametrize("job, entry, points", [
    pytest.param({}, {}, 1, id="default"),
    pytest.param({"points": 3}, {}, 3, id="on-the-job"),
    pytest.param({"points": None}, {"points": 2.5}, 2.5, id="on-the-config-entry"),
    pytest.param({"points": True}, {}, 1, id="a-bool-is-not-points"),
    pytest.param({"points": 0}, {"points": 4}, 0, id="zero-counts"),
])
def test_points_are_read_from_the_job_or_its_config_entry(job, entry, points):
    from types import SimpleNamespace

    from shapetrace.frontends.pytest_targets import _points

    assert _points(SimpleNamespace(**job), SimpleNamespace(**entry)) == points


# --- the plugin --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", RUNS)
def test_results_json_has_every_target_and_traced_test(pytester, args):
    make_project(pytester, tests=TRACED_TESTS, ini='pythonpath = ["."]')
    result, document = gradescope(pytester, *args)
    tests = by_name(document)
    traced = {f"test_course.py::{name}": status for name, status in (
        ("test_marked_buggy", "failed"), ("test_marked_fixed", "passed"),
        ("test_fixture_buggy", "failed"), ("test_fixture_check_fixed", "passed"))}
    # test_unmarked_buggy is not traced: not graded by shapetrace
    assert {name: t["status"] for name, t in tests.items()} == {
        BUGGY_TARGET: "failed", FIXED_TARGET: "passed", **traced}
    assert [t["name"] for t in document["tests"]][:2] in ([BUGGY_TARGET, FIXED_TARGET],
                                                          [FIXED_TARGET, BUGGY_TARGET])
    assert all(t["max_score"] == 1.0 for t in document["tests"])
    assert document["score"] == 3.0 == sum(t["score"] for t in document["tests"])
    buggy = tests[BUGGY_TARGET]["output"]
    assert "reshape-jumble" in buggy and f"student/buggy.py:{BUGGY_LINE}" in buggy
    assert "hint:" in buggy and "Tensor.view" not in buggy.split("hint:")[0].splitlines()[0]
    assert "no problems found" in tests[FIXED_TARGET]["output"]
    # the verdicts agree with pytest's
    for name, status in outcomes(result).items():
        if name in tests:
            assert tests[name]["status"] == status.lower()
    result.stdout.fnmatch_lines(["*shapetrace Gradescope results (6 tests): "
                                 "results/results.json*"])


def test_a_traced_test_failing_by_itself_shows_why(pytester):
    make_project(pytester, targets=(), ini='pythonpath = ["."]', tests=textwrap.dedent('''
        import pytest
        from student.fixed import Attention

        @pytest.mark.shapetrace
        def test_wrong_expectation():
            import torch
            y = Attention(143, 11)(torch.randn(5, 7, 143))
            assert y.shape == (1, 2, 3)

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        @pytest.mark.shapetrace
        def test_broken_fixture(broken):
            pass
    '''))
    _, document = gradescope(pytester)
    tests = by_name(document)
    wrong = tests["test_course.py::test_wrong_expectation"]
    assert wrong["status"] == "failed" and "assert torch.Size" in wrong["output"]
    broken = tests["test_course.py::test_broken_fixture"]
    assert broken["status"] == "failed" and "fixture broke" in broken["output"]
    assert document["score"] == 0.0


@pytest.mark.parametrize("args", RUNS)
def test_a_broken_target_scores_zero_and_the_rest_still_grade(pytester, args):
    make_project(pytester, targets=("student/missing.py", "student/fixed.py"))
    _, document = gradescope(pytester, *args)
    tests = by_name(document)
    assert tests["shapetrace::student/missing.py"]["status"] == "failed"
    assert "no such file: student/missing.py" in tests["shapetrace::student/missing.py"]["output"]
    assert tests[FIXED_TARGET]["status"] == "passed"
    assert document["score"] == 1.0


@pytest.mark.parametrize("args", RUNS)
def test_points_set_max_score(pytester, args):
    make_project(pytester)
    config = pytester.path / "pyproject.toml"
    text = config.read_text().replace('target = "student/buggy.py"',
                                      'target = "student/buggy.py"\npoints = 3')
    config.write_text(text.replace('target = "student/fixed.py"',
                                   'target = "student/fixed.py"\npoints = 2'))
    _, document = gradescope(pytester, *args)
    tests = by_name(document)
    assert (tests[BUGGY_TARGET]["max_score"], tests[BUGGY_TARGET]["score"]) == (3.0, 0.0)
    assert (tests[FIXED_TARGET]["max_score"], tests[FIXED_TARGET]["score"]) == (2.0, 2.0)
    assert document["score"] == 2.0


# --- the course template -----------------------------------------------------------------------

COURSE = REPO / "examples" / "course"
SUBMISSIONS = {  # target -> verdict
    "shapetrace::student/attention_fixed.py::MultiHeadAttention": "passed",
    "shapetrace::student/attention.py::MultiHeadAttention": "failed",
}
DIFFERENT = "shapetrace::student/attention_residual.py::MultiHeadAttention"


@pytest.mark.parametrize("args", RUNS)
def test_course_template_shows_the_three_verdicts(pytester, monkeypatch, args):
    """Correct, buggy and different from the solution: in results.json (status, score, the
    finding) and as workflow annotations at the student's lines, serial and under -n 2."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    copy_course_template(pytester.path)
    result, document = gradescope(pytester, *args)
    tests = by_name(document)
    for name, verdict in SUBMISSIONS.items():
        assert tests[name]["status"] == verdict, name
    buggy = tests["shapetrace::student/attention.py::MultiHeadAttention"]
    assert "reshape-jumble" in buggy["output"]
    different = tests[DIFFERENT]
    assert different["status"] == "failed" and "reference-mismatch" in different["output"]
    assert "reshape-jumble" not in different["output"]  # right shapes: only the comparison fails
    fixed = tests["shapetrace::student/attention_fixed.py::MultiHeadAttention"]
    assert (fixed["score"], fixed["max_score"]) == (2.0, 2.0)
    assert (different["score"], different["max_score"]) == (0.0, 2.0)
    assert (buggy["score"], buggy["max_score"]) == (0.0, 2.0)
    assert document["score"] == sum(t["score"] for t in document["tests"])
    # the same verdicts as annotations on the student's commit, each finding once
    annotations = [line for line in result.outlines if line.startswith("::")]
    assert any(a.startswith("::error file=student/attention.py,line=")
               and "title=shapetrace reshape-jumble::" in a for a in annotations)
    assert any(a.startswith("::error file=student/attention_residual.py,line=")
               and "title=shapetrace reference-mismatch::" in a for a in annotations)
    assert not any("attention_fixed.py" in a for a in annotations)
    assert len(annotations) == len(set(annotations))


def test_run_autograder_writes_results_json(tmp_path):
    """Gradescope's entry point, on a fake /autograder: the template in source/, a student's
    submission (the buggy attention) in submission/, results in results/results.json."""
    root = tmp_path / "autograder"
    copy_course_template(root / "source")
    (root / "submission").mkdir(parents=True)
    shutil.copy(COURSE / "student" / "attention.py", root / "submission" / "attention.py")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("GITHUB_ACTIONS", None)
    done = subprocess.run(["bash", str(COURSE / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads((root / "results" / "results.json").read_text())
    tests = by_name(document)
    student = tests["shapetrace::student/attention.py::MultiHeadAttention"]
    assert student["status"] == "failed" and "reshape-jumble" in student["output"]
    # only the student's file is graded: the template's other demo submissions are not there
    assert not any("attention_fixed" in name for name in tests)
    assert document["score"] < sum(t["max_score"] for t in document["tests"])
