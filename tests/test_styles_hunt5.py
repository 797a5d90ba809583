"""Styles of other libraries, papers and students for the rules that now take early exits or
share readings (tests/data/styles/hunt5_*.py): attention-scale (query pre-scaled, baddbmm's
alpha, cosine attention with a learned temperature, SDPA's ``scale=``), silent-broadcast
(per-head bias, ALiBi, relative tables, (B, 1, 1, T) padding masks, multi-query, latents),
discarded-result (results used in an ``if``, a lambda, a print; thrown away in a
comprehension), masks that fill -inf on purpose (the non-finite probe), softmax-axis on
(B, T, T) and (B, H, T, T) scores, and reshape-jumble / noncontiguous-view / op-failed on
permute, einops, flatten and no-softmax models. Every correct module is quiet (no error, and
no warning but the one it names in ``ALLOWED``); every buggy twin is found by its rule at its
``# BUG`` line."""

from __future__ import annotations

import json

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest
import torch
import torch.nn as nn

from style_corpus import STYLES, assert_found_once, bug_line, check, load, modules, show
import shapetrace as st

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILES = sorted(STYLES.glob("hunt5_*.py"))
CORRECT = list(modules(FILES, "correct", "styles5"))
BUGGY = list(modules(FILES, "buggy", "styles5"))


def test_the_corpus_is_there():
    assert len(FILES) == 6
    assert len(CORRECT) >= 25 and len(BUGGY) >= 12
    assert {p.values[0].BUG for p in BUGGY} == {
        "attention-scale", "silent-broadcast", "discarded-result", "non-finite",
        "softmax-axis", "reshape-jumble", "noncontiguous-view", "op-failed"}


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_style_is_quiet(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    allowed = getattr(cls, "ALLOWED", set())
    loud = [d for d in report.diagnostics if d.severity == "error"
            or (d.severity == "warning" and d.rule not in allowed)]
    assert not loud, show(report)
    assert report.ok


@pytest.mark.parametrize("cls", [p.values[0] for p in CORRECT if getattr(p.values[0], "ALLOWED", None)],
                         ids=lambda c: c.__name__)
def test_an_allowed_warning_is_the_unscaled_one(cls):
    """T5-style modules fold the scale into their weights: the rule can only see scores that
    are not scaled, and says so as a warning, never as an error."""
    report = check(cls, behaviour=False)
    warned = [d for d in report.diagnostics if d.severity == "warning"]
    assert [d.rule for d in warned] == ["attention-scale"], show(report)
    assert "not scaled" in warned[0].message


@pytest.mark.parametrize("cls", BUGGY)
def test_buggy_twin_is_found_at_its_line(cls):
    assert_found_once(cls)


# --- what the misses found here were --------------------------------------------------------------

def test_nan_scalar_read_by_the_next_op_reaches_the_output():
    """``-(p * log p).sum().mean()``: the mean is a one-element NaN, which the tracer keeps as a
    number; the negation reading it passes the NaN on (it is not a NaN the call chose), so the
    log that made it is reported."""
    masks = load(STYLES / "hunt5_masks.py", "styles5")
    report = check(masks.EntropyPLogP, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "non-finite"]
    assert [(d.line, d.op) for d in found] == [(bug_line(masks.EntropyPLogP), "Tensor.log")]
    assert "Inf" in found[0].message


def test_comprehension_whose_list_is_dropped():
    discard = load(STYLES / "hunt5_discard.py", "styles5")
    report = check(discard.ListOfHeadsDropped, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "discarded-result"]
    assert len(found) == 1 and found[0].count == 3, show(report)  # q, k and v: one finding
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
        with st.trace() as t:
            split(x, keep)
        assert [d.rule for d in t.diagnostics if d.rule == "discarded-result"] == [], keep


# --- the command line, nothing declared -----------------------------------------------------------

@pytest.mark.parametrize("name", ["hunt5_scale.py", "hunt5_axis.py", "hunt5_masks.py",
                                  "hunt5_reshape.py"])
def test_whole_file_nothing_declared(capsys, name):
    from shapetrace.frontends.cli import main

    code = main([str(STYLES / name), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    module = load(STYLES / name, "styles5")
    assert code == 1  # the buggy twins
    for target in report["targets"]:
        cls = getattr(module, target["target"].rpartition("::")[2])
        assert target["error"] is None, target
        loud = [(d["rule"], d["line"]) for d in target["diagnostics"]
                if d["severity"] == "error" or (d["severity"] == "warning"
                                                 and d["rule"] not in getattr(cls, "ALLOWED", ()))]
        if getattr(cls, "BUG", None) is None:
            assert loud == [], (cls.__name__, target["diagnostics"])
        else:
            assert (cls.BUG, bug_line(cls)) in loud, (cls.__name__, target["diagnostics"])


# --- an ambiguous constructor name: num_tokens -------------------------------------------------

class _VocabGPTBadHead(nn.Module):
    """num_tokens is the vocabulary (Bloem's GPT); the head is applied to the wrong tensor."""

    def __init__(self, emb, num_tokens):
        super().__init__()
        self.tokens = nn.Embedding(num_tokens, emb)
        self.toprobs = nn.Linear(emb, num_tokens)

    def forward(self, idx):
        x = self.tokens(idx)
        return self.toprobs(x.transpose(1, 2))  # BUG: op-failed (the head reads (B, C, T))


def test_num_tokens_meant_as_the_sequence_length_is_read_so():
    module = load(STYLES / "hunt5_reshape.py", "styles5")
    (result,) = st.check(module.MixerTokenMixing).targets
    assert result.error is None and not [d for d in result.diagnostics if d.severity == "error"]
    assert any("num_tokens read as the sequence length" in n for n in result.notes)


def test_num_tokens_as_the_vocabulary_keeps_the_users_bug():
    """Run again with num_tokens as T, the module fails too: the first run's finding stands."""
    (result,) = st.check(_VocabGPTBadHead).targets
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
    assert not any("num_tokens read as" in n for n in result.notes)
