"""Rules judged by meaning: each buggy style fires at its line, each correct style stays quiet.

The modules live in ``tests/data/meaning/``; a buggy one marks the line its finding must point
at with ``# BUG: <rule>``, so editing the files never breaks the line numbers. At the end, what
non-finite, discarded-result and unnormalized-attention say on modules of the style corpus
(tests/data/styles/): a NaN scalar read by the next op, a comprehension whose list is dropped,
weights renormalised over the queries.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
import torch

import shapetrace
import style_corpus
from shapetrace.base.dims import Dims

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
    """The module built and run inside one trace, as in a notebook cell: what its constructor
    makes (``nn.Parameter(torch.rand(...))``, buffers) is traced too."""
    sizes = Dims(dims or None)
    torch.manual_seed(0)
    x = torch.randn(sizes["B"], sizes["T"], sizes["C"])
    with shapetrace.trace(dims=dims or None) as t:
        model = cls(sizes["C"], sizes["H"]).eval()
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


FILES = ("softmax_styles", "non_finite_styles", "discarded_styles", "fix_styles")


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


@pytest.mark.parametrize("name", ["T5Buckets", "SafeLogWhere", "PaddedQueriesZeroed"])
def test_dropped_non_finite_is_seen_but_not_reported(name):
    """The probe does find the NaN or Inf (so the quiet test above means something); the rule
    stays quiet because nothing non-finite reaches the output."""
    t = run(getattr(load("non_finite_styles"), name))
    made = [rec for rec in t.records if rec.non_finite and rec.non_finite.origin is None]
    assert made, "the probe found no NaN or Inf"
    assert not [d for d in t.diagnostics if d.rule == "non-finite"], show(t.diagnostics)


def test_non_finite_reported_at_the_op_that_made_it_not_where_it_surfaces():
    t = run(load("non_finite_styles").FullyMaskedSample)
    carried = [rec for rec in t.records if rec.non_finite and rec.non_finite.origin is not None]
    assert carried, "the NaN was not followed past the softmax"
    (found,) = [d for d in t.diagnostics if d.rule == "non-finite"]
    assert found.op == "F.softmax" and "row (0, 0, 0)" in found.message


def test_hugging_face_t5_log_of_zero_buckets_not_reported():
    import transformers
    sizes = Dims()
    config = transformers.T5Config(d_model=sizes["C"], num_heads=sizes["H"], d_kv=sizes["d"],
                                   d_ff=4 * sizes["C"], num_layers=1, vocab_size=sizes["V"],
                                   attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.T5EncoderModel(config).eval()
    ids = torch.randint(0, sizes["V"], (sizes["B"], sizes["T"]))
    with shapetrace.trace(model) as t:
        model(input_ids=ids)
    assert any(rec.non_finite for rec in t.records), "T5's log(0) was not seen"
    assert not [d for d in t.diagnostics if d.severity == "error"], show(t.diagnostics)


@pytest.mark.parametrize("name", ["MaskNotAssignedFourLines", "MaskNotAssignedOneLine"])
def test_masked_fill_quoted_whole_and_hint_says_assign_it(name):
    t = run(getattr(load("discarded_styles"), name))
    (found,) = [d for d in t.diagnostics if d.rule == "discarded-result"]
    assert "float('-inf'))" in found.message or "-torch.inf)" in found.message, found.message
    assert found.hint.startswith("Assign it: attn_scores = attn_scores.masked_fill(...)")
    assert f"{found.line}  attn_scores = attn_scores.masked_fill(" in found.hint, found.hint


class _NaNThroughFill(torch.nn.Module):
    def forward(self, x):
        y = torch.log(x - 2.0)  # x - 2 is negative somewhere: NaN made here
        return y.masked_fill(x > 100.0, float("-inf")), torch.full_like(x, float("-inf"))


def test_fills_pass_a_nan_on_and_make_none_of_their_own():
    """A fill (masked_fill with -inf, full) only moves values: its own -inf is by design and
    is not looked at, but a NaN it carries from an earlier op is still followed to the output
    and reported where it was made."""
    with shapetrace.trace() as t:
        _NaNThroughFill()(torch.rand(3, 5))
    log, fill, full = (next(r for r in t.records if r.op == op)
                       for op in ("torch.log", "Tensor.masked_fill", "torch.full_like"))
    assert log.non_finite and log.non_finite.origin is None
    assert fill.non_finite and fill.non_finite.origin == log.index
    assert full.non_finite is None
    (found,) = [d for d in t.diagnostics if d.rule == "non-finite"]
    assert found.op == "torch.log", show(t.diagnostics)


# --- on the style corpus (tests/data/styles/) ---------------------------------------------------

def _corpus(name: str):
    return style_corpus.load(style_corpus.STYLES / name, "meaning")


def test_nan_scalar_read_by_the_next_op_reaches_the_output():
    """``-(p * log p).sum().mean()``: the mean is a one-element NaN, which the tracer keeps as a
    number; the negation reading it passes the NaN on (it is not a NaN the call chose), so the
    log that made it is reported."""
    masks = _corpus("infinite_masks.py")
    report = style_corpus.check(masks.EntropyPLogP, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "non-finite"]
    assert [(d.line, d.op) for d in found] == [(style_corpus.bug_line(masks.EntropyPLogP),
                                                "Tensor.log")]
    assert "Inf" in found[0].message


def test_comprehension_whose_list_is_dropped():
    discarded = _corpus("discarded.py")
    report = style_corpus.check(discarded.ListOfHeadsDropped, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "discarded-result"]
    assert len(found) == 1 and found[0].count == 3, style_corpus.show(report)  # q, k and v: one
    assert "comprehension" in found[0].message and "Assign the list" in found[0].hint


def test_comprehension_kept_or_used_is_not_discarded():
    """The same comprehension assigned, unpacked, returned or handed to a call is used."""

    def split(x, keep):
        parts = x.chunk(3, dim=-1)
        if keep == "assigned":
            a, b, c = [t.view(5, 7, 11, 13) for t in parts]
            return a + b + c
        if keep == "returned":
            return [t.view(5, 7, 11, 13) for t in parts]
        return torch.stack([t.view(5, 7, 11, 13) for t in parts])

    x = torch.randn(5, 7, 3 * 143)
    for keep in ("assigned", "returned", "passed"):
        with shapetrace.trace() as t:
            split(x, keep)
        assert [d.rule for d in t.diagnostics if d.rule == "discarded-result"] == [], keep


def test_renormalised_over_the_queries_points_at_the_mask_and_says_how():
    weight_sums = _corpus("weight_sums.py")
    report, found = style_corpus.assert_found_once(weight_sums.RenormalisedOverQueries)
    assert "att.sum(dim=-1, keepdim=True)" in found.hint
