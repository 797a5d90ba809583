"""discarded-result for an argument a forward drops: the caller passes a value, and the forward
reads it only into a name nothing reads afterwards (tests/data/dead_values/arguments.py)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from style_corpus import check, load, show

DATA = Path(__file__).with_name("data") / "dead_values"
ARGS = load(DATA / "arguments.py", "dead_arguments")


def _line(cls, marker="# DROPPED") -> int:
    lines, start = inspect.getsourcelines(cls)
    hits = [start + i for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    assert len(hits) == 1
    return hits[0]


def _serious(report):
    return [d for d in report.diagnostics if d.severity in ("error", "warning")]


@pytest.mark.parametrize("cls, inner, words", [
    pytest.param(ARGS.PreNormStack, ARGS.GatedMixer,
                 ["the residual the caller passes", "layer(norm(x), x)",
                  "into residual, which is never read afterwards",
                  "reaches nothing the forward returns"], id="residual-rebound"),
    pytest.param(ARGS.PaddedEncoder, ARGS.KeyMaskedAttention,
                 ["the mask the caller passes", "self.attn(self.embed(ids), mask=real)",
                  "into keep (keep = mask.bool()[:, None, None, :]), and keep is never read"],
                 id="mask-converted-and-dropped"),
    pytest.param(ARGS.BlendStack, ARGS.Blend,
                 ["the b the caller passes", "self.blend(self.norm(x), b=x)",
                  "into c (c = a if b is None else b), and c is never read"], id="other-names"),
])
def test_an_argument_the_forward_drops_is_found_at_the_line_that_reads_it(cls, inner, words):
    report = check(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    found = [d for d in report.diagnostics if d.rule == "discarded-result"]
    assert len(found) == 1, show(report)
    assert found[0].severity == "error"
    assert found[0].line == _line(inner), show(report)
    assert found[0].file.endswith("arguments.py")
    for w in words:
        assert w in found[0].message, found[0].message
    assert "stop passing" in found[0].hint


@pytest.mark.parametrize("cls", [ARGS.PreNormStackFixed, ARGS.PaddedEncoderFixed, ARGS.RightStack,
                                 ARGS.FlagStack])
def test_arguments_used_kept_for_a_signature_or_passed_as_flags_say_nothing(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert _serious(report) == [], show(report)
