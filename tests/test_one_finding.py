"""One bug, one finding (SPEC section 3): the same rule at the same line in repeated modules is
reported once, with the count and the module paths; the report does not grow with the number of
repeats."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.frontends.cli import main
from shapetrace.report.results import Diagnostic, merge_repeats, module_span

WRAPPER = Path(__file__).with_name("data") / "one_finding" / "wrapper_bug.py"
ARGS = ["--init", "d_in=C,d_out=d,context_length=L,dropout=0.0,num_heads=H", "--input", "x=B,T,C"]


def _wrapper_report(heads: int):
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("wrapper_bug", WRAPPER)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return st.check(module.MultiHeadAttentionWrapper,
                    init={"d_in": "C", "d_out": "d", "context_length": "L", "dropout": 0.0,
                          "num_heads": "H"},
                    inputs=["x=B,T,C"], dims={"H": heads})


def test_wrapper_of_heads_reports_its_bug_once():
    report = _wrapper_report(11)
    found = [d for d in report.diagnostics if d.rule == "discarded-result"]
    assert len(found) == 1, [(d.rule, d.module) for d in report.diagnostics]
    d = found[0]
    assert d.count == 11
    assert d.modules == [f"MultiHeadAttentionWrapper.heads.{i}" for i in range(11)]
    assert d.module == "MultiHeadAttentionWrapper.heads.0"
    assert d.module_span == "MultiHeadAttentionWrapper.heads.0 ... heads.10"


def test_json_keeps_its_keys_and_adds_count_and_modules(capsys):
    assert main([f"{WRAPPER}::MultiHeadAttentionWrapper", *ARGS, "--format", "json"]) == 1
    [target] = json.loads(capsys.readouterr().out)["targets"]
    [d] = [d for d in target["diagnostics"] if d["rule"] == "discarded-result"]
    assert {"rule", "code", "severity", "message", "hint", "file", "line", "module", "op"} <= set(d)
    assert d["count"] == 11 and len(d["modules"]) == 11
    assert d["module"] == d["modules"][0]


def test_text_names_the_span_and_the_count(capsys):
    main([f"{WRAPPER}::MultiHeadAttentionWrapper", *ARGS, "--no-trace", "--width", "140"])
    out = capsys.readouterr().out
    assert "in MultiHeadAttentionWrapper.heads.0 ... heads.10 (11 times)" in out
    assert out.count("discarded-result") == 1


def _cli_lines(capsys, heads: int) -> list[str]:
    main([f"{WRAPPER}::MultiHeadAttentionWrapper", *ARGS, "--dims", f"H={heads}"])
    return capsys.readouterr().out.splitlines()


def test_report_does_not_grow_with_the_number_of_buggy_heads(capsys):
    """The same bug in 11 or in 29 heads: the trace folds the repeated heads, the findings say
    it once; only the numbers in the text change."""
    few, many = _cli_lines(capsys, 11), _cli_lines(capsys, 29)
    assert len(few) == len(many)
    assert "(11 times)" in "\n".join(few) and "(29 times)" in "\n".join(many)


def _d(rule="discarded-result", line=3, module="M.heads.0", severity="error", **kw):
    return Diagnostic(rule, severity, "msg", file="m.py", line=line, module=module, **kw)


@pytest.mark.parametrize(("found", "expected"), [
    pytest.param([_d(module=f"M.layers.{i}") for i in range(12)], [(12, 12)], id="twelve-layers"),
    pytest.param([_d(module="M"), _d(module="M"), _d(module="M")], [(3, 1)], id="loop-in-one-module"),
    pytest.param([_d(line=3), _d(line=4)], [(1, 1), (1, 1)], id="two-lines-stay-two"),
    pytest.param([_d(), _d(rule="causal-leak")], [(1, 1), (1, 1)], id="two-rules-stay-two"),
    pytest.param([_d(), _d(severity="warning", rule="attention-scale"),
                  _d(module="M.heads.1")], [(2, 2), (1, 1)], id="order-kept"),
    pytest.param([_d(line=None), _d(line=None)], [(1, 1), (1, 1)], id="no-line-not-merged"),
])
def test_merge_repeats(found, expected):
    merged = merge_repeats(found)
    assert [(d.count, len(d.modules)) for d in merged] == expected


def test_merging_twice_changes_nothing():
    once = merge_repeats([_d(module=f"M.h.{i}") for i in range(3)])
    twice = merge_repeats(list(once))
    assert [(d.count, d.modules) for d in twice] == [(3, ["M.h.0", "M.h.1", "M.h.2"])]


@pytest.mark.parametrize(("modules", "span"), [
    pytest.param([], "", id="none"),
    pytest.param(["GPT.blocks.0.attn"], "GPT.blocks.0.attn", id="one"),
    pytest.param(["W.heads.0", "W.heads.1"], "W.heads.0, heads.1", id="two"),
    pytest.param(["GPT.blocks.0.attn", "GPT.blocks.5.attn", "GPT.blocks.11.attn"],
                 "GPT.blocks.0.attn ... blocks.11.attn", id="layers"),
    pytest.param(["Enc.a", "Dec.b", "Dec.c"], "Enc.a ... Dec.c", id="unrelated"),
])
def test_module_span(modules, span):
    assert module_span(modules) == span
    assert re.sub(r"\s+", " ", span) == span
