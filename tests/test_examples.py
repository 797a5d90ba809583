"""examples/: every buggy/fixed pair imports, runs, differs only in the buggy lines, and the bug
changes the result."""

import difflib
import importlib.util
import inspect
from pathlib import Path

import pytest
import torch
import torch.nn as nn

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PAIRS = sorted(p.parent.name for p in EXAMPLES.glob("*/buggy.py") if p.parent.name != "course")
FILES = [f"{name}/{which}" for name in PAIRS for which in ("buggy", "fixed")]

#: the one buggy example that is not silent
RAISES = {"view_after_transpose/buggy": RuntimeError}

# Small sizes, distinct so that no bug is hidden by two equal axes.
B, T, H, d = 2, 5, 3, 4
C = H * d
pytestmark = pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")  # transpose_T_3d

INIT = {"n_embd": C, "d_in": C, "d_out": C, "n_head": H, "num_heads": H, "head_size": d,
        "block_size": 8, "context_length": 8, "dropout": 0.0}


def load(relative: str):
    path = EXAMPLES / f"{relative}.py"
    spec = importlib.util.spec_from_file_location(f"example_{relative.replace('/', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def module_classes(module) -> list[type]:
    return [obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == module.__name__]


def run(cls, seed: int = 0):
    params = inspect.signature(cls).parameters
    torch.manual_seed(seed)
    model = cls(**{name: value for name, value in INIT.items() if name in params}).eval()
    args = []
    for name in list(inspect.signature(cls.forward).parameters)[1:]:
        args.append(torch.randn(B) if name == "target" else torch.randn(B, T, C))
    return model(*args)


def test_there_are_examples():
    assert len(PAIRS) >= 8


@pytest.mark.parametrize("relative", FILES)
def test_example_imports_and_runs(relative):
    classes = module_classes(load(relative))
    assert len(classes) == 1, "one nn.Module per example file"
    if relative in RAISES:
        with pytest.raises(RAISES[relative]):
            run(classes[0])
    else:
        out = run(classes[0])
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", [n for n in PAIRS if f"{n}/buggy" not in RAISES])
def test_the_bug_changes_the_result(name):
    # Same seed, same parameters (only the buggy lines differ): any difference is the bug's.
    buggy = run(module_classes(load(f"{name}/buggy"))[0])
    fixed = run(module_classes(load(f"{name}/fixed"))[0])
    assert buggy.shape == fixed.shape, "the bug is silent: the shapes agree"
    assert not torch.allclose(buggy, fixed)


@pytest.mark.parametrize("name", PAIRS)
def test_buggy_and_fixed_differ_only_in_the_buggy_lines(name):
    buggy = (EXAMPLES / name / "buggy.py").read_text().splitlines()
    fixed = (EXAMPLES / name / "fixed.py").read_text().splitlines()
    changed = [line for line in difflib.unified_diff(buggy, fixed, n=0, lineterm="")
               if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))]
    assert 0 < len(changed) <= 6
    assert len(buggy) <= 40


@pytest.mark.parametrize("name", PAIRS)
def test_readme_lists_the_example_and_its_command(name):
    readme = (EXAMPLES / "README.md").read_text()
    assert f"python -m shapetrace examples/{name}/buggy.py" in readme

