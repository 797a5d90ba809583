"""Rules judged by meaning: each buggy style fires at its line, each correct style stays quiet.

The modules live in ``tests/data/meaning/``; a buggy one marks the line its finding must point
at with ``# BUG: <rule>``, so editing the files never breaks the line numbers.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
import torch

import shapetrace
from shapetrace._dims import Dims

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DATA = Path(__file__).parent / "data" / "meaning"


def load(name: str):
    """The module ``tests/data/meaning/<name>.py``, imported under a private name."""
    key = f"_meaning_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, DATA / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def marked(cls) -> tuple[str, int]:
    """The rule and line of the class's one ``# BUG: rule`` marker."""
    lines, start = inspect.getsourcelines(cls)
    hits = [(text.split("# BUG:")[1].strip(), start + i) for i, text in enumerate(lines)
            if "# BUG:" in text]
    assert len(hits) == 1, f"{cls.__name__} must mark exactly one line with # BUG: rule"
    return hits[0]


def run(cls, **dims):
    sizes = Dims(dims or None)
    torch.manual_seed(0)
    model = cls(sizes["C"], sizes["H"]).eval()
    x = torch.randn(sizes["B"], sizes["T"], sizes["C"])
    with shapetrace.trace(model, dims=dims or None) as t:
        try:
            model(x)
        except RuntimeError:
            pass
    return t


def show(diagnostics) -> str:
    return "\n".join(f"{d.severity} {d.rule} line {d.line}: {d.message} | {d.hint}"
                     for d in diagnostics) or "(nothing)"


def cases(name: str, kind: str):
    module = load(name)
    return [pytest.param(cls, id=f"{name}-{cls.__name__}") for cls in getattr(module, kind)]


def correct(*names):
    return [p for n in names for p in cases(n, "CORRECT")]


def buggy(*names):
    return [p for n in names for p in cases(n, "BUGGY")]


FILES = ("softmax_styles",)


@pytest.mark.parametrize("cls", buggy(*FILES))
def test_buggy_style_fires_at_its_line(cls):
    rule, line = marked(cls)
    t = run(cls)
    found = [d for d in t.diagnostics if d.rule == rule]
    assert found, f"{rule} not reported; got:\n{show(t.diagnostics)}"
    assert [d.line for d in found] == [line], show(found)
    assert found[0].severity == "error" and found[0].hint


@pytest.mark.parametrize("cls", correct(*FILES))
def test_correct_style_has_no_error(cls):
    t = run(cls)
    assert not [d for d in t.diagnostics if d.severity == "error"], show(t.diagnostics)
