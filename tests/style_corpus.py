"""What the style corpora's tests share (tests/data/styles/*.py): load a corpus file, pick its
correct modules (no ``BUG``) and buggy twins (``BUG = "rule"``, the line marked ``# BUG``),
check one with what it declares (``INPUTS``, ``INIT``, ``DIMS``)."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
import torch

import shapetrace as st

STYLES = Path(__file__).with_name("data") / "styles"


def load(path: Path, prefix: str):
    """The corpus file as a module, registered under ``prefix_stem`` (inspect needs it)."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def modules(paths, kind: str, prefix: str):
    """``pytest.param`` of each declared module class in ``paths``: the correct ones or the
    buggy twins (``kind`` "correct" or "buggy")."""
    for path in paths:
        module = load(path, prefix)
        for name, cls in vars(module).items():
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)
                    and cls.__module__ == module.__name__ and hasattr(cls, "INPUTS")
                    and not name.startswith("_")):
                continue
            if (getattr(cls, "BUG", None) is None) == (kind == "correct"):
                yield pytest.param(cls, id=f"{path.stem}-{name}")


def check(cls, **extra):
    return st.check(cls, init=getattr(cls, "INIT", None), inputs=cls.INPUTS,
                    dims=getattr(cls, "DIMS", None), **extra)


def show(report) -> str:
    return "\n".join(f"{d.severity} {d.rule} {d.location}: {d.message}" for d in report.diagnostics)


def bug_line(cls) -> int:
    lines, start = inspect.getsourcelines(cls)
    hits = [start + i for i, text in enumerate(lines) if text.rstrip().endswith("# BUG")]
    assert len(hits) == 1, f"{cls.__name__} must mark exactly one line with # BUG"
    return hits[0]


def assert_found_once(cls, *, at_line: bool = True):
    """The buggy twin ``cls`` is found once, by its ``BUG`` rule, at its ``# BUG`` line (unless
    ``at_line`` is False), with the rule's severity and a hint; the report it made comes back."""
    from shapetrace.rules.registry import RULES

    rule = RULES[cls.BUG]
    report = check(cls, behaviour=rule.kind == "behaviour")
    assert report.targets[0].error is None, report.targets[0].error
    found = [d for d in report.diagnostics if d.rule == cls.BUG]
    assert len(found) == 1, show(report)
    if at_line:
        assert found[0].line == bug_line(cls), show(report)
    assert found[0].severity == rule.severity and found[0].hint, show(report)
    return report, found[0]
