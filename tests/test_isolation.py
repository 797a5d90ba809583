"""A target's imports never change what the course's own tests import (SPEC section 7).

In-process tests of ``_isolation.Isolation`` on small module files, then the plugin in a
subprocess (serial and ``-n 2``): a student's ``helpers.py`` next to the target must not shadow
the course's ``tests/helpers.py``; ``sys.path`` changes made by the student's file are undone; the
target still finds its own helpers while it runs.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from shapetrace.drive.isolation import Isolation
from test_pytest_plugin import RUNS, outcomes, run

pytest_plugins = ["pytester"]


@pytest.fixture
def student(tmp_path, monkeypatch):
    """A directory with ``iso_helpers.py`` and ``iso_main.py`` (which imports it)."""
    (tmp_path / "iso_helpers.py").write_text("WHO = 'student'\n")
    (tmp_path / "iso_main.py").write_text(
        "import sys\nimport iso_helpers\nsys.path.append('/nonexistent/student/path')\n"
        "def who():\n    import iso_helpers\n    return iso_helpers.WHO\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("iso_helpers", "iso_main", "iso_late"):
        sys.modules.pop(name, None)


def test_imports_leave_sys_modules_and_sys_path_as_they_were(student):
    before_path = list(sys.path)
    isolation = Isolation()
    with isolation:
        import iso_main  # noqa: F401
    assert "iso_main" not in sys.modules and "iso_helpers" not in sys.modules
    assert sys.path == before_path
    assert set(isolation.modules) == {"iso_main", "iso_helpers"}


def test_the_modules_are_back_while_the_target_runs(student):
    isolation = Isolation()
    with isolation:
        import iso_main
    with isolation:
        assert sys.modules["iso_helpers"] is isolation.modules["iso_helpers"]
        assert iso_main.who() == "student"
        (student / "iso_late.py").write_text("X = 1\n")
        import iso_late  # noqa: F401  (imported while running: kept with the target's modules)
    assert "iso_helpers" not in sys.modules and "iso_late" not in sys.modules
    assert "iso_late" in isolation.modules


def test_a_course_module_of_the_same_name_is_put_back(student, tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    (course / "iso_helpers.py").write_text("WHO = 'course'\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("iso_helpers", course / "iso_helpers.py")
    theirs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(theirs)
    sys.modules["iso_helpers"] = theirs
    isolation = Isolation()
    with isolation:
        del sys.modules["iso_helpers"]  # what _targets does with a module the file would shadow
        import iso_main
    assert sys.modules["iso_helpers"] is theirs
    with isolation:
        assert iso_main.who() == "student"  # the target sees its own
    assert sys.modules["iso_helpers"] is theirs  # and the course gets its own back


def test_library_modules_stay_loaded(student):
    sys.modules.pop("colorsys", None)
    with Isolation():
        import colorsys  # noqa: F401  (the standard library: shared, never unloaded)
    assert "colorsys" in sys.modules


# --- in a course repository --------------------------------------------------------------------

STUDENT = '''
import sys

import torch.nn as nn

from helpers import SCALE

sys.path.insert(0, "/nonexistent/student/path")


class Scale(nn.Module):
    def forward(self, x):
        import helpers  # late: must still be the student's while the target runs
        return x * SCALE * helpers.SCALE
'''

COURSE_TESTS = '''
import sys

import helpers  # tests/helpers.py, the course's


def test_course_helpers_are_the_course_s():
    assert helpers.WHO == "course", helpers.__file__


def test_sys_path_is_the_course_s():
    assert "/nonexistent/student/path" not in sys.path
'''


def course_repository(pytester) -> None:
    student = pytester.mkdir("student")
    (student / "attention.py").write_text(STUDENT)
    (student / "helpers.py").write_text("WHO = 'student'\nSCALE = 1.0\n")
    tests = pytester.mkdir("tests")
    (tests / "helpers.py").write_text("WHO = 'course'\n")
    (tests / "test_course.py").write_text(COURSE_TESTS)
    pytester.makepyprojecttoml(textwrap.dedent('''
        [tool.pytest.ini_options]
        testpaths = ["tests"]

        [[tool.shapetrace.targets]]
        target = "student/attention.py::Scale"
        inputs = ["x=B,T,C"]
        causal = false
    '''))


EXPECTED = {"shapetrace::student/attention.py::Scale": "PASSED",
            "tests/test_course.py::test_course_helpers_are_the_course_s": "PASSED",
            "tests/test_course.py::test_sys_path_is_the_course_s": "PASSED"}


@pytest.mark.parametrize("args", RUNS)
def test_a_students_helpers_do_not_shadow_the_courses(pytester, args):
    course_repository(pytester)
    result = run(pytester, *args)
    assert outcomes(result) == EXPECTED, result.stdout.str()[-3000:]


def test_the_same_run_without_the_plugin_agrees(pytester):
    course_repository(pytester)
    result = run(pytester, "-p", "no:shapetrace")
    assert outcomes(result) == {k: v for k, v in EXPECTED.items() if k.startswith("tests/")}


@pytest.mark.parametrize("args", RUNS)
def test_a_broken_target_fails_alone(pytester, args):
    course_repository(pytester)
    (pytester.path / "student" / "exits.py").write_text("import sys\nsys.exit(3)\n")
    config = pytester.path / "pyproject.toml"
    config.write_text(config.read_text() + '\n[[tool.shapetrace.targets]]\n'
                                           'target = "student/exits.py::Gone"\n')
    result = run(pytester, *args)
    assert outcomes(result) == {**EXPECTED, "shapetrace::student/exits.py::Gone": "FAILED"}
    result.stdout.fnmatch_lines(["shapetrace could not run student/exits.py::Gone: cannot import "
                                 "student/exits.py: it called exit(3) while importing*"])
    assert "Traceback" not in result.stdout.str()
