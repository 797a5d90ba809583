"""The rules that reason about sizes, at a student's sizes where two names share a size.

At T = d = 8, H = d = 8 or B = H = 2 a size alone cannot say which axis it is. Whatever names the
sizes (``dims=``, the model's attributes, a jaxtyping annotation, declared inputs), every shape
and every message must stay true: a name of a shared size shows only where the code states it
(``t.view(B, T, H, hs)``) and then it is the axis's own, a correct module gets no finding but the
dim-collision warning, and a bug the sizes still show is caught.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

import shapetrace

sys.path.insert(0, str(Path(__file__).parent / "data" / "names"))
from variants import AnnotatedMHA, AnonymousMHA, ProvenMHA  # noqa: E402

SIZES = {
    "T=d=8": dict(B=2, T=8, C=64, H=8),
    "H=d=8": dict(B=2, T=10, C=64, H=8),
    "B=H=2": dict(B=2, T=10, C=64, H=2),
}
NAMED_BY = ["declared", "attributes", "annotations", "inputs"]
BUGS = {
    "correct": {},
    "scale-by-sqrt-C": {"scale": "C"},
    "scale-by-sqrt-H": {"scale": "H"},
    "split-without-transpose": {"split": "jumble"},
    "merge-without-transpose": {"merge": "jumble"},
}
SHAPE = re.compile(r"\(((?:[0-9A-Za-z_*]+, )+[0-9A-Za-z_*]+|[0-9A-Za-z_*]+,)\)")


def _run(sizes: dict, named_by: str, bugs: dict):
    width, heads = sizes["C"], sizes["H"]
    cls = {"attributes": ProvenMHA, "annotations": AnnotatedMHA}.get(named_by, AnonymousMHA)
    model = cls(width, heads, **bugs)
    options = {"declared": {"dims": sizes}, "inputs": {"inputs": ["x=B,T,C"]}}.get(named_by, {})
    torch.manual_seed(0)
    with shapetrace.trace(model, **options) as t:
        model(torch.randn(sizes["B"], sizes["T"], sizes["C"]))
    return t


def _own_size(name: str, dims) -> bool:
    """Whether ``name`` is a dim whose size no other dim of the run shares."""
    return name in dims and list(dims.values()).count(dims[name]) == 1


def _label_is_true(label: str, size: int, dims) -> bool:
    """Whether ``label``'s value is ``size`` (what it means is checked by ``_meaning_errors``)."""
    value = 1
    for part in label.split("*"):
        part, _, divisor = part.partition("/")  # a piece of an axis: T/5 (a window, a chunk)
        if part.isdigit():
            value *= int(part)
        elif part in dims:
            value *= dims[part]
        else:
            return False  # a name that is not a dim, or one whose size another dim shares
        if divisor:
            if not divisor.isdigit() or value % int(divisor):
                return False
            value //= int(divisor)
    return value == size


#: the source lines whose outputs are known: the head split, the weights
_HEADS = "t.view(B, T, H, hs).transpose(1, 2)"


def _meaning_errors(t, sizes: dict) -> list[str]:
    """Labels false for what the axes are: the input (B, T, C), the heads after the split's
    transpose (B, H, T, d), the weights (B, H, T, T); a label is the axis's name or its number."""
    b, tt, c, h = sizes["B"], sizes["T"], sizes["C"], sizes["H"]
    d = c // h
    first = t.records[0].inputs[0] if t.records[0].inputs else t.records[0].outputs[0]
    known = [(first, ("B", "T", "C"), (b, tt, c))]
    for rec in t.records:
        if rec.op == "F.softmax":
            known.append((rec.outputs[0], ("B", "H", "T", "T"), (b, h, tt, tt)))
        if rec.op == "Tensor.transpose" and rec.source.strip().startswith(_HEADS):
            known.append((rec.outputs[0], ("B", "H", "T", "d"), (b, h, tt, d)))
    wrong = []
    for meta, names, shape in known:
        labels = t.shape_of(meta).strip("()").rstrip(",").split(", ")
        if any(label not in (name, str(size)) for label, name, size in zip(labels, names, shape)):
            wrong.append(f"{t.shape_of(meta)} for {names}")
    return wrong


def _wrong_labels(t) -> list[str]:
    wrong = []
    for rec in t.records:
        for meta in (*rec.inputs, *rec.outputs):
            labels = t.shape_of(meta).strip("()").rstrip(",").split(", ")
            if meta.shape and any(not _label_is_true(label, size, t.dims)
                                  for label, size in zip(labels, meta.shape)):
                wrong.append(f"line {rec.line} {rec.op}: {t.shape_of(meta)} for {meta.shape}")
    return wrong


def _names_in_words(text: str) -> list[str]:
    """The dim names a message states: in its shapes, and the scale it names (1/sqrt(X))."""
    names = [part for shape in SHAPE.findall(text) for label in shape.split(", ")
             for part in label.rstrip(",").split("*") if not part.isdigit()]
    names += [a or b for a, b in re.findall(r"\b1/(?:sqrt\((\w+)\)|([A-Za-z_]\w*))", text)]
    return [n for n in names if not n.isdigit()]


def _findings_words(t) -> list[tuple[str, str]]:
    out = []
    for d in t.diagnostics:
        hint = re.split(r": \d+  ", d.hint or "")[0]  # the user's own line is theirs to name
        out.append((d.rule, f"{d.message} {hint}"))
    return out


CASES = [pytest.param(sizes, named_by, bug, id=f"{key}-{named_by}-{bug}")
         for key, sizes in SIZES.items() for named_by in NAMED_BY for bug in BUGS]


@pytest.mark.parametrize("sizes, named_by, bug", CASES)
def test_every_shape_and_message_is_true(sizes, named_by, bug):
    t = _run(sizes, named_by, BUGS[bug])
    assert not _wrong_labels(t), _wrong_labels(t)
    if bug != "split-without-transpose":  # a jumbled split has no head axes to name truly
        assert not _meaning_errors(t, sizes), _meaning_errors(t, sizes)
    shapes = {t.shape_of(m) for rec in t.records for m in (*rec.inputs, *rec.outputs)}
    for rule, words in _findings_words(t):
        if rule == "dim-collision":
            continue  # its point is to name the dims that share a size (tested below)
        # a shared size's name only in a shape the trace shows (named where the code says)
        in_shapes = {part for shape in SHAPE.findall(words) if f"({shape})" in shapes
                     for label in shape.split(", ") for part in label.split("*")}
        names = _names_in_words(words)
        assert all(_own_size(n, t.dims) or n in in_shapes or n == "d" and rule == "attention-scale"
                   for n in names), (rule, words, t.dims)


@pytest.mark.parametrize("key", list(SIZES))
@pytest.mark.parametrize("named_by", NAMED_BY)
def test_correct_module_gets_no_finding_but_the_collision(key, named_by):
    t = _run(SIZES[key], named_by, {})
    assert {d.rule for d in t.diagnostics} <= {"dim-collision"}, [d.message for d in t.diagnostics]
    for d in t.diagnostics:
        assert d.severity == "warning"
        size = d.data["size"]
        assert f"shapes print the number {size}, not a name" in d.message
        assert all(t.dims[n] == size for n in d.data["names"])


def test_collision_names_every_name_of_the_size():
    t = _run(SIZES["T=d=8"], "declared", {})  # d = C / H = 8 as well
    (d,) = [d for d in t.diagnostics if d.rule == "dim-collision"]
    assert d.data["names"] == ["T", "H", "d"] and d.data["size"] == 8
    assert d.message.startswith("T, H and d are all 8 in this run")
    assert "python -m shapetrace" in d.hint and "T=3" in d.hint


@pytest.mark.parametrize("named_by", ["annotations", "inputs"])
def test_a_head_axis_the_size_of_T_is_not_called_T(named_by):
    """Only B, T and C are stated: the 8 heads of 8 cut from C = 64 are numbers, not T."""
    t = _run(SIZES["T=d=8"], named_by, {})
    assert set(t.dims) == {"B", "T", "C"}
    view = next(r for r in t.records if r.op == "Tensor.view")
    assert t.shape_of(view.inputs[0]) == "(B, T, C)"
    assert t.shape_of(view.outputs[0]) == "(B, T, 8, 8)"
    scores = next(r for r in t.records if r.op == "F.softmax")
    assert t.shape_of(scores.outputs[0]) == "(B, 8, T, T)"


@pytest.mark.parametrize("key", ["T=d=8", "H=d=8"])
@pytest.mark.parametrize("named_by", NAMED_BY)
def test_scale_by_sqrt_width_says_the_factor_when_it_equals_1_over_d(key, named_by):
    """1/sqrt(64) = 1/8 = 1/d = 1/H: the message gives the factor, not a size it came from."""
    t = _run(SIZES[key], named_by, {"scale": "C"})
    (d,) = [d for d in t.diagnostics if d.rule == "attention-scale"]
    assert d.severity == "error"
    assert "0.125" in d.message and "1/sqrt(C)" not in d.message
    assert "1/d " not in d.message and "1/H" not in d.message
    assert "not by head_size itself" not in d.hint


@pytest.mark.parametrize("named_by", NAMED_BY)
def test_scale_by_sqrt_width_is_named_when_its_size_is_its_own(named_by):
    t = _run(SIZES["B=H=2"], named_by, {"scale": "C"})  # C = 64, d = 32
    (d,) = [d for d in t.diagnostics if d.rule == "attention-scale"]
    assert ("1/sqrt(C)" in d.message) is ("C" in t.dims)


@pytest.mark.parametrize("named_by", NAMED_BY)
def test_scale_by_sqrt_heads_at_batch_equal_heads(named_by):
    """1/sqrt(2) is 1/sqrt(H) and 1/sqrt(B): named only when H is known and nothing else is 2
    (the batch of 2 is 2 even where no name says B: only the model's n_head proves H), else the
    factor alone, or nothing when no stated size explains it."""
    t = _run(SIZES["B=H=2"], named_by, {"scale": "H"})
    found = [d for d in t.diagnostics if d.rule == "attention-scale"]
    shared = "B" in t.dims or t.dims.shared(2)
    if "H" in t.dims and not shared:
        (d,) = found
        assert "1/sqrt(H)" in d.message
    for d in found if shared else ():
        assert "1/sqrt(H)" not in d.message and "1/sqrt(B)" not in d.message
        assert "0.7071" in d.message
    if named_by == "declared":
        assert len(found) == 1  # B and H both known: the factor alone


@pytest.mark.parametrize("named_by", NAMED_BY)
@pytest.mark.parametrize("bug", ["split-without-transpose", "merge-without-transpose"])
def test_jumble_the_sizes_still_show_is_caught_with_true_names(named_by, bug):
    t = _run(SIZES["H=d=8"], named_by, BUGS[bug])  # T = 10 stands out from H = d = 8
    (d,) = [d for d in t.diagnostics if d.rule == "reshape-jumble"]
    assert d.severity == "error"
    shapes = SHAPE.findall(d.message)
    # heads and head size print as numbers, or as H and d where the code names them
    assert any("8" in s.split(", ") or {"H", "d"} <= set(s.split(", ")) for s in shapes)
    if "T" in t.dims:
        assert "T" in d.message
    else:
        assert "10" in d.message
