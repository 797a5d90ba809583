"""TARGET strings: files, classes in files, classes in packages, and every way they fail."""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import textwrap
from pathlib import Path

import pytest
from torch import nn

from shapetrace.base.errors import TargetError, UsageError
from shapetrace.drive.targets import Target, resolve_targets

DATA = Path(__file__).parent / "data" / "targets"


@pytest.fixture
def in_data(monkeypatch):
    """Run from the fixture directory, so targets and messages use short relative paths."""
    monkeypatch.chdir(DATA)


def one_line(exc_info, *fragments: str) -> str:
    message = str(exc_info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


# The three forms ------------------------------------------------------------------------------


def test_file_gives_every_module_defined_there_in_source_order(in_data):
    targets = resolve_targets("students.py")
    assert [t.display for t in targets] == [
        "students.py::MultiHeadAttention",
        "students.py::Head",
        "students.py::CausalSelfAttention",
        "students.py::Outer",
    ]
    assert all(isinstance(t, Target) and issubclass(t.cls, nn.Module) for t in targets)
    assert {t.spec for t in targets} == {"students.py"}


def test_file_leaves_out_imported_classes_and_aliases(in_data):
    names = [t.cls.__name__ for t in resolve_targets("students.py")]
    assert "LayerNorm" not in names
    assert names.count("Head") == 1


@pytest.mark.parametrize(
    ("spec", "qualname"),
    [
        pytest.param("students.py::Head", "Head", id="class"),
        pytest.param("students.py::Outer.Inner", "Outer.Inner", id="nested"),
        pytest.param("students.py::LayerNorm", "LayerNorm", id="imported-by-name"),
        pytest.param("./students.py::Alias", "Head", id="alias-dot-slash"),
    ],
)
def test_file_and_name(in_data, spec, qualname):
    (target,) = resolve_targets(spec)
    assert target.cls.__qualname__ == qualname
    assert target.display == spec
    assert target.spec == spec


def test_display_keeps_the_path_as_given(monkeypatch):
    monkeypatch.chdir(DATA.parent.parent)
    (target,) = resolve_targets("data/targets/students.py::Head")
    assert target.display == "data/targets/students.py::Head"


def test_absolute_path():
    (target,) = resolve_targets(f"{DATA / 'students.py'}::Head")
    assert target.display == f"{DATA / 'students.py'}::Head"


def test_file_relative_to_root():
    (target,) = resolve_targets("students.py::Head", root=DATA)
    assert target.display == "students.py::Head"
    assert target.cls.__name__ == "Head"


def test_package_module_and_name(in_data):
    (target,) = resolve_targets("student_pkg.attention::SelfAttention")
    assert target.display == "student_pkg.attention::SelfAttention"
    assert target.cls.__module__ == "student_pkg.attention"


def test_package_module_from_root():
    (target,) = resolve_targets("student_pkg.attention::SelfAttention", root=DATA)
    assert target.cls.__name__ == "SelfAttention"
    assert str(DATA) not in sys.path


def test_file_with_relative_imports_resolves_inside_its_package(in_data):
    """``from .layers import linear`` in student_pkg/attention.py: imported by path as a module
    of its package, the display keeping the path as given."""
    (target,) = resolve_targets("student_pkg/attention.py")
    assert target.display == "student_pkg/attention.py::SelfAttention"
    assert target.cls.__module__.startswith("student_pkg._shapetrace_target_")
    assert target.cls(8, 2).proj.in_features == 8


def test_installed_package_module():
    (target,) = resolve_targets("torch.nn::MultiheadAttention")
    assert target.cls is nn.MultiheadAttention


# How files are imported -----------------------------------------------------------------------


def test_module_is_registered_so_inspect_and_dataclasses_work(in_data):
    (target,) = resolve_targets("config_style.py::CausalSelfAttention")
    module = sys.modules[target.cls.__module__]
    assert Path(module.__file__) == DATA / "config_style.py"
    assert dataclasses.is_dataclass(module.GPTConfig)
    assert "class CausalSelfAttention" in inspect.getsource(target.cls)


def test_module_name_is_not_main_and_is_unique(in_data):
    (a,) = resolve_targets("students.py::Head")
    (b,) = resolve_targets("uses_sibling.py::Projection")
    assert a.cls.__module__ != "__main__"
    assert a.cls.__module__ != b.cls.__module__
    assert a.cls.__module__ not in ("students", "uses_sibling")


def test_same_file_is_imported_once(in_data):
    (first,) = resolve_targets("students.py::Head")
    (again,) = resolve_targets(str(DATA / "students.py") + "::Head")
    assert first.cls is again.cls


def test_changed_file_is_imported_again(tmp_path):
    path = write(tmp_path / "attn.py", """
        from torch import nn
        class A(nn.Module):
            pass
    """)
    (old,) = resolve_targets(str(path))
    write(path, """
        from torch import nn
        class B(nn.Module):
            pass
    """)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    (new,) = resolve_targets(str(path))
    assert (old.cls.__name__, new.cls.__name__) == ("A", "B")


def test_sibling_imports_work_and_sys_path_is_restored(in_data):
    before = list(sys.path)
    (target,) = resolve_targets("uses_sibling.py")
    assert target.display == "uses_sibling.py::Projection"
    assert isinstance(target.cls(8).proj, nn.Linear)
    assert sys.path == before


def test_sys_path_is_restored_after_a_failed_import(in_data):
    before = list(sys.path)
    with pytest.raises(TargetError):
        resolve_targets("import_error.py")
    assert sys.path == before


def test_failed_import_leaves_no_module_behind(in_data):
    before = set(sys.modules)
    with pytest.raises(TargetError):
        resolve_targets("runtime_error.py")
    assert not [m for m in set(sys.modules) - before if "runtime_error" in m]


def test_two_students_with_same_helper_name_get_their_own(tmp_path):
    for student, width in (("alice", 3), ("bob", 5)):
        write(tmp_path / student / "helpers.py", f"WIDTH = {width}\n")
        write(tmp_path / student / "attention.py", """
            from torch import nn
            import helpers
            class Attention(nn.Module):
                width = helpers.WIDTH
        """)
    (alice,) = resolve_targets(str(tmp_path / "alice" / "attention.py"))
    (bob,) = resolve_targets(str(tmp_path / "bob" / "attention.py"))
    assert (alice.cls.width, bob.cls.width) == (3, 5)


# Errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "error", "fragments"),
    [
        pytest.param("missing.py", UsageError, ["no such file: missing.py"], id="file-not-found"),
        pytest.param("missing.py::Head", UsageError, ["no such file: missing.py"],
                     id="file-not-found-with-name"),
        pytest.param("configs", UsageError, ["not a Python file: configs"], id="directory"),
        pytest.param("configs/toml/shapetrace.toml", UsageError, ["not a Python file"], id="not-py"),
        pytest.param("attention", UsageError, ["target 'attention': no such file",
                                               "path/to/file.py::Name"], id="bare-name"),
        pytest.param("::Head", UsageError, ["expected path/to/file.py"], id="no-location"),
        pytest.param("students.py::", UsageError, ["expected path/to/file.py"], id="no-name"),
        pytest.param("students.py::A::B", UsageError, ["more than one '::'"], id="two-separators"),
        pytest.param("my-pkg.mod::X", UsageError, ["not a file or a module path"], id="bad-module-path"),
        pytest.param("broken_syntax.py", TargetError,
                     ["syntax error in broken_syntax.py:5: expected ':'"], id="syntax-error"),
        pytest.param("broken_syntax.py::Broken", TargetError,
                     ["syntax error in broken_syntax.py:5"], id="syntax-error-with-name"),
        pytest.param("imports_broken.py", TargetError,
                     ["cannot import imports_broken.py", "syntax error in broken_syntax.py:5"],
                     id="syntax-error-in-sibling"),
        pytest.param("import_error.py", TargetError,
                     ["cannot import import_error.py: ModuleNotFoundError: "
                      "No module named 'definitely_not_an_installed_module'",
                      "(at import_error.py:3)"], id="import-error"),
        pytest.param("runtime_error.py", TargetError,
                     ["cannot import runtime_error.py: KeyError: 'width' (at runtime_error.py:4)"],
                     id="error-at-import"),
        pytest.param("imports_raising.py", TargetError,
                     ["RuntimeError: weights.pt is missing", "(at raising_helper.py:5)"],
                     id="error-in-sibling"),
        pytest.param("script_exit.py", TargetError,
                     ["called exit(3)", "if __name__ == '__main__'", "(at script_exit.py:10)"],
                     id="sys-exit"),
        pytest.param("no_modules.py", TargetError,
                     ["no nn.Module subclasses defined in no_modules.py"], id="no-modules"),
        pytest.param("students.py::Nope", TargetError,
                     ["no class 'Nope' in students.py",
                      "MultiHeadAttention, Head, CausalSelfAttention, Outer"], id="unknown-class"),
        pytest.param("students.py::Outer.Nope", TargetError,
                     ["no class 'Outer.Nope' in students.py"], id="unknown-nested-class"),
        pytest.param("students.py::helper", TargetError,
                     ["'helper' in students.py is a function, not an nn.Module subclass"],
                     id="function"),
        pytest.param("students.py::NotAModule", TargetError,
                     ["'NotAModule' in students.py is a class, not an nn.Module subclass"],
                     id="plain-class"),
        pytest.param("student_pkg.attention::not_a_class", TargetError,
                     ["is a function, not an nn.Module subclass"], id="module-function"),
        pytest.param("student_pkg.attention::Missing", TargetError,
                     ["no class 'Missing' in student_pkg.attention", "SelfAttention"],
                     id="module-unknown-class"),
        pytest.param("no_such_pkg.attention::X", TargetError,
                     ["cannot import module 'no_such_pkg.attention': no module named 'no_such_pkg'"],
                     id="module-not-importable"),
        pytest.param("student_pkg.nope::X", TargetError,
                     ["no module named 'student_pkg.nope'"], id="submodule-not-importable"),
    ],
)
def test_errors(in_data, spec, error, fragments):
    with pytest.raises(error) as exc_info:
        resolve_targets(spec)
    one_line(exc_info, *fragments)


def test_error_in_package_module_names_the_user_line(tmp_path):
    write(tmp_path / "course" / "__init__.py", "")
    write(tmp_path / "course" / "attn.py", """
        import torch
        SCALE = torch.ones(2) @ torch.ones(3)
    """)
    with pytest.raises(TargetError) as exc_info:
        resolve_targets("course.attn::X", root=tmp_path)
    one_line(exc_info, "cannot import course.attn: RuntimeError", "attn.py:3)")


def test_syntax_error_in_package_module(tmp_path):
    write(tmp_path / "course2" / "__init__.py", "")
    write(tmp_path / "course2" / "attn.py", "def f(:\n    pass\n")
    with pytest.raises(TargetError) as exc_info:
        resolve_targets("course2.attn::X", root=tmp_path)
    one_line(exc_info, "syntax error in", "attn.py:1")


def test_errors_have_no_chained_traceback(in_data):
    with pytest.raises(TargetError) as exc_info:
        resolve_targets("import_error.py")
    assert exc_info.value.__cause__ is None
    assert exc_info.value.__suppress_context__
