"""Properties every correct module has, checked on the values of a run: the buggy modules of
tests/data/valueprops break one at the line marked ``# BUG``; the correct ones stay quiet."""

from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.drive.targets import resolve_targets

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "valueprops"


def _check(spec: str, **options):
    (target,) = resolve_targets(spec, root=ROOT)
    return st.check(target.cls, target=target.display, **options)


def _marked(path: Path, cls: str) -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith(f"class {cls}("))
    for number in range(start, len(lines)):
        if "# BUG" in lines[number]:
            return number + 1
    raise AssertionError(f"no # BUG marker in {cls}")


NEW_RULES = {"constant-result"}

FIRING = [
    ("collapse.py", "DiagonalWeights", "constant-result", {}),
    ("collapse.py", "NormOverScore", "constant-result", {}),
]
QUIET = [
    ("collapse.py", "ContractedWeights", {}),
    ("collapse.py", "TopOneRouter", {}),
    # mixes samples by design (batch-leak says so): only the diagonal must not be reported
    ("collapse.py", "InBatchPositives", {"batch_mixing": True}),
]


@pytest.mark.parametrize("file, cls, rule, options", FIRING, ids=[c[1] for c in FIRING])
def test_property_fires_at_the_marked_line(file, cls, rule, options):
    report = _check(f"{DATA / file}::{cls}", **options)
    assert report.targets[0].error is None
    found = [d for d in report.diagnostics if d.rule == rule]
    assert found, [(d.rule, d.line, d.message) for d in report.diagnostics]
    assert _marked(DATA / file, cls) in {d.line for d in found}


@pytest.mark.parametrize("file, cls, options", [(f, c, dict(o)) for f, c, o in QUIET], ids=[c[1] for c in QUIET])
def test_correct_module_stays_quiet(file, cls, options):
    mixing = options.pop("batch_mixing", False)
    report = _check(f"{DATA / file}::{cls}", **options)
    assert report.targets[0].error is None
    assert mixing or report.ok, [(d.rule, d.line, d.message) for d in report.errors]
    mine = [d for d in report.diagnostics if d.rule in NEW_RULES]
    assert not mine, [(d.rule, d.line, d.message) for d in mine]
