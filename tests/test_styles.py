"""A corpus of correct attention written in many styles (tests/data/styles/): every module
checked with ``shapetrace.check`` has no error-level finding; the buggy counterparts of
head-grouping and silent-broadcast are found at their line.

Each module in the corpus carries ``INIT`` / ``INPUTS`` (and ``DIMS``) as class attributes; a
buggy one names its rule in ``BUG`` and marks its line with ``# BUG``.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
import torch

import shapetrace as st

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
pytest.importorskip("einops")

STYLES = Path(__file__).with_name("data") / "styles"
#: The rules this corpus holds to "no finding at all" on correct code (warnings included).
STRICT = ("head-grouping", "silent-broadcast")
#: Correct styles on which a rule owned elsewhere still raises a false alarm.
KNOWN_FALSE_ALARMS: dict[str, str] = {}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"styles_{name}", STYLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _modules(kind: str):
    for path in sorted(STYLES.glob("*.py")):
        module = _load(path.stem)
        for name, cls in vars(module).items():
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)
                    and cls.__module__ == module.__name__ and hasattr(cls, "INPUTS")
                    and not name.startswith("_")):
                continue
            if (getattr(cls, "BUG", None) is None) == (kind == "correct"):
                marks = ()
                reason = KNOWN_FALSE_ALARMS.get(f"{path.stem}::{name}")
                if reason and kind == "correct":
                    marks = (pytest.mark.xfail(strict=True, reason=reason),)
                yield pytest.param(cls, id=f"{path.stem}-{name}", marks=marks)


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


@pytest.mark.parametrize("cls", list(_modules("correct")))
def test_correct_style_has_no_error(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.errors, show(report)


@pytest.mark.parametrize("cls", list(_modules("correct")))
def test_correct_style_raises_no_grouping_or_broadcast_warning(cls):
    report = check(cls, behaviour=False)
    assert not [d for d in report.diagnostics if d.rule in STRICT], show(report)


@pytest.mark.parametrize("cls", list(_modules("buggy")))
def test_buggy_style_is_found_at_its_line(cls):
    report = check(cls, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == cls.BUG]
    assert found, show(report)
    assert [d.line for d in found] == [bug_line(cls)], show(report)
    assert found[0].hint
