"""Target items named without importing the target (``_pytest_targets``): the names read from the
file must be the ones importing it gives, or none at all (then it is imported at collection);
a target is imported only when one of its items runs."""

from __future__ import annotations

import textwrap

import pytest

from shapetrace.drive.isolation import Isolation
from shapetrace.frontends.pytest_targets import declared_module_classes
from shapetrace.drive.targets import resolve_targets
from test_pytest_plugin import RUNS, make_project, outcomes, run

pytest_plugins = ["pytester"]

HEADER = ("import torch\nimport torch.nn as nn\nfrom torch import nn as tnn\n"
          "from dataclasses import dataclass\n")

READABLE = {
    "plain": "class A(nn.Module):\n    def forward(self, x):\n        return x\n",
    "two-and-a-helper": ("def helper(x):\n    return x\n\nclass B(tnn.Module):\n"
                         "    def forward(self, x):\n        return x\n\n"
                         "class A(torch.nn.Module):\n    forward = B.forward\n"),
    "base-without-forward-left-out": ("class Base(nn.Module):\n    pass\n\nclass A(Base):\n"
                                      "    def forward(self, x):\n        return x\n"),
    "base-with-forward-kept": ("class Base(nn.Module):\n    def forward(self, x):\n"
                               "        return x\n\nclass A(Base):\n    pass\n"),
    "torch-layer-as-base": "class A(nn.Linear):\n    pass\n",
    "config-dataclass-is-no-module": ("@dataclass\nclass Config:\n    n: int = 3\n\n"
                                      "class A(nn.Module):\n    def forward(self, x):\n"
                                      "        return x\n"),
    "alone-without-forward": "class A(nn.Module):\n    pass\n",
}

UNSURE = {
    "nested-class": ("def make():\n    class A(nn.Module):\n        pass\n    return A\n\n"
                     "A = make()\n"),
    "rebound": "class A(nn.Module):\n    pass\nA = None\n",
    "decorated": "def deco(c):\n    return c\n\n@deco\nclass A(nn.Module):\n    pass\n",
    "forward-patched": "class A(nn.Module):\n    pass\nA.forward = lambda self, x: x\n",
    "base-from-a-sibling": "from helpers import Base\n\nclass A(Base):\n    pass\n",
    "two-forwards": ("class M:\n    def forward(self, x):\n        return x\n\n"
                     "class A(nn.Module, M):\n    pass\n"),
    "made-by-type": "A = type('A', (nn.Module,), {})\n",
    "star-import": "from torch.nn import *\n\nclass A(Module):\n    pass\n",
    "metaclass": "class A(nn.Module, metaclass=type):\n    pass\n",
    "no-module-class": "class A:\n    pass\n",
    "syntax-error": "class A(nn.Module)\n    pass\n",
}


def _imported(path) -> list[str]:
    with Isolation():
        return [t.cls.__qualname__ for t in resolve_targets(str(path))]


@pytest.mark.parametrize("source", [pytest.param(v, id=k) for k, v in READABLE.items()])
def test_names_read_are_the_names_importing_finds(tmp_path, source):
    path = tmp_path / "attention.py"
    path.write_text(HEADER + source)
    names = declared_module_classes(path)
    assert names is not None
    assert names == _imported(path)


@pytest.mark.parametrize("source", [pytest.param(v, id=k) for k, v in UNSURE.items()])
def test_a_file_that_must_run_to_tell_is_not_read(tmp_path, source):
    (tmp_path / "helpers.py").write_text("import torch.nn as nn\n\nclass Base(nn.Module):\n"
                                         "    def forward(self, x):\n        return x\n")
    path = tmp_path / "attention.py"
    path.write_text(HEADER + source)
    assert declared_module_classes(path) is None


def test_a_module_named_like_torch_next_to_the_file_is_not_trusted(tmp_path):
    (tmp_path / "torch.py").write_text("")
    path = tmp_path / "attention.py"
    path.write_text(HEADER + READABLE["plain"])
    assert declared_module_classes(path) is None


IMPORT_MARK = textwrap.dedent('''
    import pathlib
    import torch.nn as nn

    pathlib.Path("imported-{name}").write_text("")


    class {name}(nn.Module):
        def __init__(self, **config):
            super().__init__()

        def forward(self, x):
            return x
''')


@pytest.mark.parametrize("args", RUNS)
def test_a_target_is_imported_only_when_one_of_its_items_runs(pytester, args):
    make_project(pytester, targets=("student/one.py", "student/two.py"))
    (pytester.path / "student" / "one.py").write_text(IMPORT_MARK.format(name="One"))
    (pytester.path / "student" / "two.py").write_text(IMPORT_MARK.format(name="Two"))
    result = run(pytester, "-k", "One", *args)
    assert outcomes(result) == {"shapetrace::student/one.py::One": "PASSED"}
    assert (pytester.path / "imported-One").exists()
    assert not (pytester.path / "imported-Two").exists()


def test_a_file_that_fails_to_import_fails_each_of_its_items_with_one_line(pytester):
    make_project(pytester, targets=("student/broken.py",))
    (pytester.path / "student" / "broken.py").write_text(
        "import torch.nn as nn\nimport no_such_package\n\n"
        "class A(nn.Module):\n    pass\n\nclass B(nn.Module):\n    pass\n")
    result = run(pytester)
    assert outcomes(result) == {"shapetrace::student/broken.py::A": "FAILED",
                                "shapetrace::student/broken.py::B": "FAILED"}
    result.stdout.fnmatch_lines(["shapetrace could not run student/broken.py: cannot import "
                                 "student/broken.py: ModuleNotFoundError: *no_such_package*"])
    assert "Traceback" not in result.stdout.str()
