"""A student's attention at the student's own sizes, where sizes coincide (B = T, T = C, H = d,
B = d, B = H, T = 1, H = 1, d = 1, C = 768 with H = 12): every name printed is the axis's own,
a correct module gets nothing but the dim-collision warning, and a bug is caught when the sizes
can show it and never reported in false words when they cannot.

The module proves its width and heads (``n_embd``, ``n_head``), or nothing; the sizes are
declared with ``dims=`` or not; the input is made outside the block or by ``torch.randn`` inside.

dim-collision on modules of the style corpus: probe sizes made equal are one warning naming the
bugs they can hide, the corpus's own probe sizes never collide, and a small GPT at its own sizes
(H = d = 8) is told that its numbers print as numbers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

import shapetrace
import style_corpus

sys.path.insert(0, str(Path(__file__).parent / "data" / "student"))
from sized_attention import AnonymousAttention, CausalSelfAttention  # noqa: E402

#: (B, T, H, d): the sizes students pick, many of them coinciding
SIZES = {
    "B2-T10-H8-d8": (2, 10, 8, 8),
    "B1-T10-H8-d8": (1, 10, 8, 8),
    "B2-T8-H2-d4-T=C": (2, 8, 2, 4),
    "B3-T8-H2-d4-T=C": (3, 8, 2, 4),
    "B2-T12-H4-d3-T=C": (2, 12, 4, 3),
    "B16-T8-H4-d16-B=d": (16, 8, 4, 16),
    "B2-T2-H4-d2-B=T=d": (2, 2, 4, 2),
    "B6-T6-H2-d3-B=T=C": (6, 6, 2, 3),
    "B4-T16-H4-d4-T=C": (4, 16, 4, 4),
    "B4-all-4": (4, 4, 4, 4),
    "B2-T1-H4-d4": (2, 1, 4, 4),
    "B2-T7-H1-d16": (2, 7, 1, 16),
    "B2-T9-H4-d1": (2, 9, 4, 1),
    "B2-T3-H3-d3-odd": (2, 3, 3, 3),
    "B8-T8-H12-d64-gpt2": (8, 8, 12, 64),
    "B2-T10-H4-d16": (2, 10, 4, 16),
    "B7-T10-H4-d4-probe-7": (7, 10, 4, 4),  # 7 and 5 are probe primes, 10 is 2*5: still numbers
    "B7-T5-H4-d4-probe-swap": (7, 5, 4, 4),
    "B5-T14-H4-d8-probe-5": (5, 14, 4, 8),
    "B1-T7-H2-d8-probe-7": (1, 7, 2, 8),
}
MODELS = {"attributes": CausalSelfAttention, "anonymous": AnonymousAttention}
SHAPE = re.compile(r"\(((?:[0-9A-Za-z_*/]+, )+[0-9A-Za-z_*/]+|[0-9A-Za-z_*/]+,)\)")


def _trace(sizes, model_kind, declared, bug=None, inside=False):
    b, t, h, d = sizes
    model = MODELS[model_kind](h * d, h, bug=bug)
    dims = {"B": b, "T": t, "C": h * d, "H": h} if declared else None
    torch.manual_seed(0)
    x = torch.randn(b, t, h * d)
    with shapetrace.trace(model, dims=dims) as tr:
        model(torch.randn(b, t, h * d) if inside else x)
    return tr


def _labels(tr, meta) -> list[str]:
    return tr.shape_of(meta).strip("()").rstrip(",").split(", ")


def _true_for(label: str, name: str, size: int) -> bool:
    """A label is true for an axis that is ``name`` of ``size``: the name, or the number."""
    return label in (name, str(size)) or (size == 1 and label == "1") \
        or (name == "d" and label == "C")  # one head: the head size is the whole width


def _meaning_errors(tr, sizes) -> list[str]:
    """Labels that are false for what the axes are: the input (B, T, C), the heads (B, H, T, d)
    after the transpose, the weights (B, H, T, T)."""
    b, t, h, d = sizes
    wrong = []
    first = tr.records[0].inputs[0] if tr.records[0].inputs else tr.records[0].outputs[0]
    meanings = [(first, ("B", "T", "C"), (b, t, h * d))]
    for rec in tr.records:
        if rec.op.endswith("softmax"):
            meanings.append((rec.outputs[0], ("B", "H", "T", "T"), (b, h, t, t)))
        if rec.op.endswith("transpose") and rec.source.endswith(".view(B, T, self.n_head, hs)"
                                                                ".transpose(1, 2)"):
            meanings.append((rec.outputs[0], ("B", "H", "T", "d"), (b, h, t, d)))
    for meta, names, shape in meanings:
        labels = _labels(tr, meta)
        if tuple(meta.shape) != shape:
            continue
        for label, name, size in zip(labels, names, shape):
            if not _true_for(label, name, size):
                wrong.append(f"{tr.shape_of(meta)} for {names}")
    return wrong


def _value_errors(tr) -> list[str]:
    """Labels whose value is not the axis's size (``2*B`` for 10 where B is 5)."""
    sizes = dict(tr.dims)
    wrong = []
    for rec in tr.records:
        for meta in (*rec.inputs, *rec.outputs):
            for label, size in zip(_labels(tr, meta), meta.shape):
                try:
                    value = eval(label.replace("/", "//"), {}, dict(sizes))  # noqa: S307
                except Exception:  # noqa: BLE001 - a name that is no dim at all
                    value = None
                if value != size:
                    wrong.append(f"{rec.op}: {tr.shape_of(meta)} for {tuple(meta.shape)}")
    return wrong


CASES = [pytest.param(sizes, kind, declared, id=f"{key}-{kind}-{'dims' if declared else 'nodims'}")
         for key, sizes in SIZES.items() for kind in MODELS for declared in (False, True)]


@pytest.mark.parametrize(("sizes", "kind", "declared"), CASES)
@pytest.mark.parametrize("inside", [pytest.param(False, id="x"), pytest.param(True, id="randn")])
def test_correct_attention_is_clean_and_named_truly(sizes, kind, declared, inside):
    tr = _trace(sizes, kind, declared, inside=inside)
    assert [d.rule for d in tr.diagnostics if d.rule != "dim-collision"] == []
    assert _meaning_errors(tr, sizes) == []
    assert _value_errors(tr) == []


def test_width_proven_by_n_embd_does_not_name_a_time_axis_of_its_size():
    """n_embd = 8 proves C = 8; the 8 tokens of x (3, 8, 8) are not C: both print as 8."""
    tr = _trace((3, 8, 2, 4), "attributes", False)
    assert _labels(tr, tr.records[0].inputs[0]) == ["3", "8", "8"]
    assert "T" not in tr.dims and tr.dims["C"] == 8


def test_head_size_proven_by_the_model_does_not_name_the_batch():
    """C = 64 in 4 heads proves d = 16; a batch of 16 is not d."""
    tr = _trace((16, 8, 4, 16), "attributes", False)
    shapes = [tr.shape_of(m) for rec in tr.records for m in rec.outputs]
    assert "(16, 8, C)" in shapes
    assert not [s for s in shapes if s.startswith("(d")]
    assert any(s == "(16, H, 8, d)" for s in shapes)  # the view names its head size


def test_names_proven_by_the_model_stay_where_no_axis_shares_their_size():
    tr = _trace((2, 10, 4, 16), "attributes", False)
    shapes = [tr.shape_of(m) for rec in tr.records for m in rec.outputs]
    assert "(2, 10, C)" in shapes and "(2, H, 10, d)" in shapes


@pytest.mark.parametrize("sizes", [pytest.param((7, 10, 4, 4), id="B7-T10"),
                                   pytest.param((7, 5, 4, 4), id="B7-T5"),
                                   pytest.param((5, 14, 4, 8), id="B5-T14")])
def test_probe_primes_in_a_students_sizes_are_not_read_as_probe_names(sizes):
    """n_embd = 16 says the model was not built at the probe sizes: a batch of 7 is not T, a
    length of 10 is not 2*B (SPEC section 2)."""
    b, t, h, d = sizes
    tr = _trace(sizes, "attributes", False)
    assert _labels(tr, tr.records[0].inputs[0]) == [str(b), str(t), "C"]
    assert "B" not in tr.dims and "T" not in tr.dims


def test_dim_collision_at_proven_sizes_names_only_names():
    """H = d = 8 proven by the model: the warning names H and d, and says the number prints."""
    tr = _trace((2, 10, 8, 8), "attributes", False)
    (d,) = [d for d in tr.diagnostics if d.rule == "dim-collision"]
    assert d.message.startswith("H and d are both 8")
    assert "print the number 8" in d.message


def test_scale_by_width_is_the_factor_when_the_width_is_also_the_length():
    """T = C = 8 (n_embd = 8): 1/sqrt(8) could be 1/sqrt(T); the message gives the factor."""
    tr = _trace((3, 8, 2, 4), "attributes", False, bug="scale")
    (d,) = [d for d in tr.diagnostics if d.rule == "attention-scale"]
    assert "1/sqrt(C)" not in d.message and "0.3536" in d.message


#: bug -> the rule; and the sizes where it cannot show (every size it could be told by is shared)
BUGS = {"split": "reshape-jumble", "merge": "reshape-jumble", "scale": "attention-scale",
        "softmax": "softmax-axis"}
VISIBLE = {  # (sizes, kind, declared) where each bug must be caught
    "B2-T10-H4-d16": {"split", "merge", "scale", "softmax"},
    "B8-T8-H12-d64-gpt2": {"split", "merge", "scale", "softmax"},
    "B2-T10-H8-d8": {"split", "merge", "scale", "softmax"},
    "B3-T8-H2-d4-T=C": {"split", "softmax"},
}
SILENT = {  # the sizes cannot show these bugs: H = 1 makes a split legal and sqrt(C) = sqrt(d)
    "B2-T7-H1-d16": {"split", "merge", "scale"},
    "B2-T1-H4-d4": {"softmax"},  # one query: a softmax over the queries is one over the keys
}
BUG_CASES = [pytest.param(key, kind, declared, bug, id=f"{key}-{kind}-{declared}-{bug}")
             for key in (*VISIBLE, *SILENT) for kind in MODELS for declared in (False, True)
             for bug in BUGS]


@pytest.mark.parametrize(("key", "kind", "declared", "bug"), BUG_CASES)
def test_buggy_twins(key, kind, declared, bug):
    tr = _trace(SIZES[key], kind, declared, bug=bug)
    found = [d for d in tr.diagnostics if d.rule != "dim-collision"]
    if bug in SILENT.get(key, ()):
        assert found == []
        return
    if bug in VISIBLE.get(key, ()) and not (bug == "scale" and kind == "anonymous" and not declared):
        assert {d.rule for d in found} == {BUGS[bug]}  # the split: once per q, k, v line
    # whatever is said is said in true words: a name of a shared size only where the code's
    # view or reshape states it, and then the axis's own
    stated = {"B", "T", "H", "d", "C"}
    for d in found:
        for shape in SHAPE.findall(d.message):
            for label in shape.split(", "):
                for part in label.split("*"):
                    assert part.isdigit() or (part in tr.dims and (
                        part in stated or not tr.dims.shared(tr.dims[part]))), d.message
    assert _value_errors(tr) == []
    assert _meaning_errors(tr, SIZES[key]) == []


# --- dim-collision on modules of the style corpus ------------------------------------------------

def _collisions(report_or_trace):
    return [d for d in report_or_trace.diagnostics if d.rule == "dim-collision"]


def _key_transposes():
    return style_corpus.load(style_corpus.STYLES / "key_transposes.py", "sizes")


def test_probe_sizes_made_equal_are_one_warning_with_the_hidden_bugs():
    report = shapetrace.check(_key_transposes().BatchedMT, init={"d_model": "C"},
                              inputs=["x=B,T,C"], dims={"B": 7}, behaviour=False)
    (found,) = _collisions(report)
    assert found.severity == "warning" and "B and T are both 7" in found.message
    assert "B=" in found.hint and "T=7" not in found.hint
    assert report.ok  # a warning, not an error


def test_distinct_probe_sizes_never_collide(monkeypatch):
    """The corpus's modules that run at probe sizes of their own (``DIMS``: the grouped-query
    ones at H=6, windows and patches at Y and X of their own) give no two names one size."""
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # REFERENCE paths are relative to it
    paths = sorted(style_corpus.STYLES.glob("*.py"))
    for param in style_corpus.modules(paths, "correct", "sizes"):
        cls = param.values[0]
        if getattr(cls, "DIMS", None):
            assert not _collisions(style_corpus.check(cls, behaviour=False)), cls.__name__


def test_user_sizes_where_heads_and_head_size_are_equal():
    """A small GPT at its own sizes: n_embd=64, n_head=8, so H = d = 8; the warning says the
    numbers print as numbers and which bugs can hide."""
    model = _key_transposes().PermuteLastTwo(64, 8).eval()
    with shapetrace.trace(model, dims={"B": 4, "T": 10, "C": 64, "H": 8}) as t:
        model(torch.randn(4, 10, 64))
    (found,) = _collisions(t)
    assert "H and d are both 8" in found.message
    assert "the number 8" in found.message and "heads and head size" in found.message
    assert not [d for d in t.diagnostics if d.severity == "error"]


def test_user_sizes_all_distinct_are_quiet():
    model = _key_transposes().PermuteLastTwo(96, 6).eval()  # H=6, d=16
    with shapetrace.trace(model, dims={"B": 4, "T": 10, "C": 96, "H": 6}) as t:
        model(torch.randn(4, 10, 96))
    assert not _collisions(t) and not t.diagnostics, t.diagnostics


def test_a_collision_no_traced_axis_has_is_not_reported():
    """B = T = 3 declared, but the traced code has no axis of size 3: nothing can be confused."""
    with shapetrace.trace(dims={"B": 3, "T": 3}) as t:
        (torch.randn(5, 7) @ torch.randn(7, 11)).softmax(-1)
    assert not _collisions(t)
