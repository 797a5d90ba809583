"""The public surface: every name in ``shapetrace.__all__`` imports; the package alone is light."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import shapetrace


@pytest.mark.parametrize("name", shapetrace.__all__)
def test_public_name_imports(name):
    namespace: dict = {}
    exec(f"from shapetrace import {name}", namespace)
    assert namespace[name] is getattr(shapetrace, name)
    assert namespace[name] is not None


def test_all_has_no_duplicates_and_dir_lists_it():
    assert len(shapetrace.__all__) == len(set(shapetrace.__all__))
    assert set(shapetrace.__all__) <= set(dir(shapetrace))


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        shapetrace.no_such_name  # noqa: B018


@pytest.mark.parametrize("statement", [
    pytest.param("import shapetrace", id="package"),
    pytest.param("import shapetrace; shapetrace.__version__", id="version"),
    pytest.param("from shapetrace import ShapetraceError, UsageError, TargetError", id="errors"),
    pytest.param("import shapetrace.__main__", id="main-module"),
])
def test_import_does_not_import_torch(statement):
    script = textwrap.dedent(f"""
        import sys
        {statement}
        assert "torch" not in sys.modules, "torch was imported"
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_star_import_exports_exactly_all():
    namespace: dict = {}
    exec("from shapetrace import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(shapetrace.__all__)
