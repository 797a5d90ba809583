"""What the style corpus's tests share (tests/data/styles/*.py): load a corpus file, pick its
correct modules (no ``BUG``) and buggy twins (``BUG = "rule"``, the line marked ``# BUG``),
check one with what it declares.

A module class of the corpus declares, as class attributes:

- ``INPUTS``: forward's arguments, ``name=DIMS[:DTYPE[:HIGH]]`` (a class without it is a helper,
  not a corpus module; so is one whose name starts with ``_``);
- ``INIT``: constructor keywords (dim names resolve to probe sizes); ``DIMS``: probe sizes other
  than the defaults;
- ``REFERENCE``: a TARGET it is compared with (``reference-mismatch``), relative to the
  repository root;
- on a correct module, ``ALLOWED``: the warnings it gives by design, each rule with words its
  message holds (``{"attention-scale": "not scaled"}``: T5 folds the scale into its weights);
- on a buggy twin, ``BUG``: the rule that finds it, at the line marked ``# BUG``; and, where the
  check can only name another op, ``FOUND_AT``: the text of the line it is found at (``None``:
  no single op can be named); where a milder variant of the rule finds it, ``VARIANT``; where
  it is found only once its intent is declared (its ``INIT`` gives a flag its code never reads),
  ``UNDECLARED``: the note said with nothing declared.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
import torch

import shapetrace as st

STYLES = Path(__file__).with_name("data") / "styles"
_AT_THE_BUG_LINE = object()


def load(path: Path, prefix: str):
    """The corpus file as a module, registered under ``prefix_stem`` (inspect needs it)."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def modules(paths, kind: str, prefix: str):
    """``pytest.param`` of each declared module class in ``paths``: the correct ones or the
    buggy twins (``kind`` "correct" or "buggy"), with the id ``stem-ClassName``."""
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
    """``shapetrace.check`` of ``cls`` with what it declares; a ``REFERENCE`` path is relative to
    the current directory (the tests that use it run from the repository root)."""
    if getattr(cls, "REFERENCE", None) and "reference" not in extra:
        extra["reference"] = cls.REFERENCE
    return st.check(cls, init=getattr(cls, "INIT", None), inputs=cls.INPUTS,
                    dims=getattr(cls, "DIMS", None), **extra)


def show(report) -> str:
    return "\n".join(f"{d.severity} {d.rule} {d.location}: {d.message}" for d in report.diagnostics)


def line_of(cls, text: str) -> int:
    """The line of ``cls``'s source that holds ``text`` (exactly one must)."""
    lines, start = inspect.getsourcelines(cls)
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def bug_line(cls) -> int:
    lines, start = inspect.getsourcelines(cls)
    hits = [start + i for i, text in enumerate(lines) if text.rstrip().endswith("# BUG")]
    assert len(hits) == 1, f"{cls.__name__} must mark exactly one line with # BUG"
    return hits[0]


def assert_found_once(cls):
    """The buggy twin ``cls`` is found once, by its ``BUG`` rule, at its ``# BUG`` line (or at
    the line its ``FOUND_AT`` names), with the rule's severity and a hint; the behaviour checks
    run when the rule is one of theirs. The report it made and the finding come back."""
    from shapetrace.rules.registry import RULES

    rule = RULES[cls.BUG]
    report = check(cls, behaviour=rule.kind == "behaviour")
    assert report.targets[0].error is None, report.targets[0].error
    found = [d for d in report.diagnostics if d.rule == cls.BUG]
    assert len(found) == 1, show(report)
    line = bug_line(cls)  # marked even where the check names another op, for the reader
    found_at = getattr(cls, "FOUND_AT", _AT_THE_BUG_LINE)
    if found_at is _AT_THE_BUG_LINE:
        assert found[0].line == line, show(report)
    elif found_at is not None:
        text = Path(inspect.getsourcefile(cls)).read_text(encoding="utf-8").splitlines()
        assert found_at in text[found[0].line - 1], (found[0].line, show(report))
    assert found[0].severity == rule.severity_of(getattr(cls, "VARIANT", None)) and found[0].hint, \
        show(report)
    return report, found[0]
