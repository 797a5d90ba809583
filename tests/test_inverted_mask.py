"""An inverted causal mask (each query's earlier keys hidden, the later ones kept) is a causal
leak found at the line that built the mask, naming the op that applied it and the softmax that
took the weights; built outside the forward, it is found where it was applied. The modules are
in the style corpus, tests/data/styles/inverted_masks.py."""

from __future__ import annotations


import pytest

from style_corpus import STYLES, bug_line, check, line_of, load, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

corpus = load(STYLES / "inverted_masks.py", "inverted")


def _leak(cls):
    report = check(cls)
    found = [d for d in report.diagnostics if d.rule == "causal-leak"]
    assert len(found) == 1, show(report)
    return found[0]


@pytest.mark.parametrize("name, applied, own", [
    ("KeepTriangleFilled", "scores = scores.masked_fill(keep, -1e9)", True),
    ("WherePositionsBackwards", "scores = torch.where(allowed", False),
])
def test_found_where_the_mask_was_built_naming_where_it_was_applied(name, applied, own):
    cls = getattr(corpus, name)
    found = _leak(cls)
    assert found.line == bug_line(cls) and found.data["inverted"], found.message
    assert f"{found.file}:{line_of(cls, applied)}" in found.message
    weights = line_of(cls, "softmax(")
    assert f"the weights are taken at {found.file}:{weights}" in found.message
    assert ("and its own key" in found.message) == own
    assert "the causal mask built here" in found.message


def test_a_mask_built_outside_the_forward_is_found_where_it_is_applied():
    cls = corpus.AdditiveBufferTransposed
    found = _leak(cls)
    assert found.line == bug_line(cls) and found.data["inverted"], found.message
    assert found.message.startswith("the causal mask is inverted: `q @ k.transpose")


def test_a_leak_without_a_mask_is_not_called_an_inverted_mask():
    """A mask that lets the future through but is no inverted triangle (a window the wrong way
    round) keeps the plain causal-leak finding, at the masked_fill that applied it, used by the
    softmax on the next line."""
    variants = load(STYLES / "variants_bugs.py", "inverted_variants")
    cls = variants.SlidingWindowInverted
    found = _leak(cls)
    assert "inverted" not in found.data and found.line == bug_line(cls), found.message
    assert found.used_at[1] == bug_line(cls) + 1
