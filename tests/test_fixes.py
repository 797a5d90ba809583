"""Hints carry the corrected line: pasted over the user's line, it makes the module clean.

Each buggy module of ``tests/data/meaning/fix_styles.py`` (and of the attention-scale files
``scale_fix_styles.py`` and ``scale_fix_nomath.py``) is traced; the finding its ``# BUG`` marker
names must come with a corrected line (``Diagnostic.data["fix"]``), shown in the hint; that line,
written over the file's line, must give a module with no error-level finding. Where nothing in
the source proves what to write (``NO_FIX``), there is no corrected line.
"""

from __future__ import annotations

import importlib.util

import pytest

from test_meaning_rules import DATA, load, marked, run, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILES = ("fix_styles", "scale_fix_styles", "scale_fix_nomath")


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fixed(cls, file: str, tmp_path):
    """The finding's corrected line pasted over the file's line, and the class re-imported."""
    rule, line = marked(cls)
    t = run(cls)
    found = [d for d in t.diagnostics if d.rule == rule]
    assert [d.line for d in found] == [line], show(t.diagnostics)
    fix = found[0].data.get("fix")
    assert fix, f"no corrected line: {found[0].hint}"
    assert f"{fix['line']}  " in found[0].hint, found[0].hint
    lines = (DATA / f"{file}.py").read_text(encoding="utf-8").splitlines()
    assert lines[fix["line"] - 1] != fix["text"]
    lines[fix["line"] - 1] = fix["text"]
    patched = tmp_path / f"fixed_{file}.py"
    patched.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fix, getattr(_import(patched, f"_fixed_{file}_{cls.__name__}"), cls.__name__)


@pytest.mark.parametrize(("file", "cls"), [
    pytest.param(file, c, id=f"{marked(c)[0]}-{c.__name__}")
    for file in FILES for c in load(file).BUGGY])
def test_corrected_line_pasted_back_makes_the_module_clean(file, cls, tmp_path):
    _, fixed = _fixed(cls, file, tmp_path)
    after = run(fixed)
    assert not [d for d in after.diagnostics if d.severity == "error"], show(after.diagnostics)
    assert not [d for d in after.diagnostics if d.rule == marked(cls)[0]], show(after.diagnostics)


@pytest.mark.parametrize(("file", "cls", "text"), [
    pytest.param("scale_fix_styles", "UnscaledMatmul",
                 "att = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)", id="added-own-attr"),
    pytest.param("scale_fix_styles", "UnscaledInsideSoftmax",
                 "att = F.softmax(torch.matmul(q, k.mT) / math.sqrt(head_dim), dim=-1)",
                 id="added-local-inside-call"),
    pytest.param("scale_fix_styles", "UnscaledEinsumLocalSize",
                 'scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(C // self.n_head)',
                 id="added-own-expression"),
    pytest.param("scale_fix_styles", "ScaleSqrtWidthOwnSize",
                 "att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_size)",
                 id="replaced-width-by-own-attr"),
    pytest.param("scale_fix_styles", "SdpaScaleByWidth",
                 "y = F.scaled_dot_product_attention(q, k, v, is_causal=True)", id="sdpa-drop-last"),
    pytest.param("scale_fix_styles", "SdpaScaleOne",
                 "y = F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                 id="sdpa-drop-middle"),
    pytest.param("scale_fix_nomath", "UnscaledBmm",
                 "w = torch.bmm(q, k.transpose(1, 2)) * self.d_k ** -0.5", id="no-math-multiply"),
    pytest.param("scale_fix_nomath", "ScaleByHeadCount",
                 "att = (q @ k.transpose(-2, -1)) * self.d_k ** -0.5", id="no-math-replace"),
])
def test_scale_fix_writes_the_users_own_head_size(file, cls, text, tmp_path):
    fix, _ = _fixed(getattr(load(file), cls), file, tmp_path)
    assert fix["text"].strip().split("  #")[0] == text


@pytest.mark.parametrize("cls", [pytest.param(c, id=c.__name__)
                                 for c in load("scale_fix_styles").NO_FIX])
def test_no_corrected_scale_when_no_head_size_is_proven(cls):
    rule, line = marked(cls)
    t = run(cls)
    found = [d for d in t.diagnostics if d.rule == rule]
    assert [d.line for d in found] == [line], show(t.diagnostics)
    assert found[0].data.get("fix") is None, found[0].hint
    assert "math.sqrt(head_size)" in found[0].hint


@pytest.mark.parametrize(("source", "want"), [
    pytest.param("x = scores.softmax(dim=1)", "x = scores.softmax(dim=-1)", id="method-keyword"),
    pytest.param("x = scores.softmax(1)", "x = scores.softmax(-1)", id="method-positional"),
    pytest.param("x = F.softmax(scores)", "x = F.softmax(scores, dim=-1)", id="function-no-dim"),
    pytest.param("x = torch.softmax(s, 0)", "x = torch.softmax(s, -1)", id="function-positional"),
])
def test_set_dim_rewrites_only_the_dim(source, want, tmp_path):
    import linecache

    from shapetrace.rules import fixes

    path = tmp_path / "line.py"
    path.write_text(source + "\n", encoding="utf-8")
    linecache.checkcache(str(path))
    start = source.index("=") + 2
    seg = fixes.Segment(str(path), 1, source, start, len(source),
                        __import__("ast").parse(source[start:], mode="eval").body)
    assert fixes.set_dim(seg, "-1", method_slot=0, function_slot=1).text == want


def test_no_corrected_line_when_the_text_spans_lines():
    from shapetrace.rules import fixes

    class Rec:  # an op whose text goes on over the next line: its end column is unknown
        where = (str(DATA / "fix_styles.py"), 10, 4, None)

    assert fixes.segment(Rec()) is None
