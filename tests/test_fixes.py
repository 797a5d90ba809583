"""Hints carry the corrected line: pasted over the user's line, it makes the module clean.

Each buggy module of ``tests/data/meaning/fix_styles.py`` is traced; the finding its ``# BUG``
marker names must come with a corrected line (``Diagnostic.data["fix"]``), shown in the hint;
that line, written over the file's line, must give a module with no error-level finding.
"""

from __future__ import annotations

import importlib.util

import pytest

from test_meaning_rules import DATA, load, marked, run, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

STYLES = load("fix_styles")


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("cls", [pytest.param(c, id=f"{marked(c)[0]}-{c.__name__}")
                                 for c in STYLES.BUGGY])
def test_corrected_line_pasted_back_makes_the_module_clean(cls, tmp_path):
    rule, line = marked(cls)
    t = run(cls)
    found = [d for d in t.diagnostics if d.rule == rule]
    assert [d.line for d in found] == [line], show(t.diagnostics)
    fix = found[0].data.get("fix")
    assert fix, f"no corrected line: {found[0].hint}"
    assert f"{fix['line']}  " in found[0].hint, found[0].hint

    lines = (DATA / "fix_styles.py").read_text(encoding="utf-8").splitlines()
    assert lines[fix["line"] - 1] != fix["text"]
    lines[fix["line"] - 1] = fix["text"]
    patched = tmp_path / "fixed_styles.py"
    patched.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fixed = getattr(_import(patched, f"_fixed_{cls.__name__}"), cls.__name__)
    after = run(fixed)
    assert not [d for d in after.diagnostics if d.severity == "error"], show(after.diagnostics)


@pytest.mark.parametrize(("source", "want"), [
    pytest.param("x = scores.softmax(dim=1)", "x = scores.softmax(dim=-1)", id="method-keyword"),
    pytest.param("x = scores.softmax(1)", "x = scores.softmax(-1)", id="method-positional"),
    pytest.param("x = F.softmax(scores)", "x = F.softmax(scores, dim=-1)", id="function-no-dim"),
    pytest.param("x = torch.softmax(s, 0)", "x = torch.softmax(s, -1)", id="function-positional"),
])
def test_set_dim_rewrites_only_the_dim(source, want, tmp_path):
    import linecache

    from shapetrace._rules import fixes

    path = tmp_path / "line.py"
    path.write_text(source + "\n", encoding="utf-8")
    linecache.checkcache(str(path))
    start = source.index("=") + 2
    seg = fixes.Segment(str(path), 1, source, start, len(source),
                        __import__("ast").parse(source[start:], mode="eval").body)
    assert fixes.set_dim(seg, "-1", method_slot=0, function_slot=1).text == want


def test_no_corrected_line_when_the_text_spans_lines():
    from shapetrace._rules import fixes

    class Rec:  # an op whose text goes on over the next line: its end column is unknown
        where = (str(DATA / "fix_styles.py"), 10, 4, None)

    assert fixes.segment(Rec()) is None
