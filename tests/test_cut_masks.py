"""A causal triangle cut to one entry by an index where a slice was meant is a causal leak found
at the index (tests/data/cut_masks/blended.py); sliced, the same blend is quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from style_corpus import bug_line, line_of, load, show

import shapetrace as st

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

corpus = load(Path(__file__).with_name("data") / "cut_masks" / "blended.py", "cut_masks")


def _check(cls):
    return st.check(cls, init={"width": "C", "heads": "H"}, inputs=["x=B,T,C"], causal=True)


def test_a_triangle_cut_to_one_entry_is_found_at_the_index():
    cls = corpus.BlendedTriangleCut
    report = _check(cls)
    found = [d for d in report.diagnostics if d.rule == "causal-leak"]
    assert len(found) == 1, show(report)
    assert found[0].line == bug_line(cls), show(report)
    assert "cut to one entry of its table" in found[0].message
    assert f"at {found[0].file}:{line_of(cls, 'w = w * tri')}" in found[0].message
    assert ":T, :T" in found[0].hint


def test_the_triangle_sliced_is_quiet():
    report = _check(corpus.BlendedTriangle)
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.severity in ("error", "warning")], show(report)
