"""Attention judged by what it computes: which softmaxes are attention weights (a Newton-Schulz
iteration on landmark weights and a softmaxed feature map are not), and where a wrong scale was
chosen (the line that set the number, named beside the line that used it). The modules are in
the style corpus, tests/data/styles/attention_properties.py."""

from __future__ import annotations

import textwrap

import pytest
import torch

import shapetrace as st
from shapetrace.analysis.facts import analyse
from style_corpus import STYLES, bug_line, check, line_of, load, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

corpus = load(STYLES / "attention_properties.py", "properties")


def test_pseudo_inverse_iterate_is_not_attention():
    """Of the three landmark softmaxes, the middle one's weights feed only an iteration whose
    other operand is made from them: two attentions are found, not three."""
    cls = corpus.LandmarkPseudoInverse
    model = cls(143, 11).eval()
    with st.trace(rules=False) as t:
        model(torch.randn(5, 12, 143))
    found = {att.softmax.line for att in analyse(t).attentions}
    assert line_of(cls, "middle = (q_marks") not in found
    assert {line_of(cls, "left = (q @"), line_of(cls, "right = (q_marks")} <= found


def test_scale_chosen_in_the_constructor_is_placed_there_beside_its_use():
    cls = corpus.QueryScaledInPlaceByWidth
    report = check(cls, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "attention-scale"]
    chosen = line_of(cls, "self.scaling = width ** -0.5")
    assert [d.line for d in found] == [chosen] == [bug_line(cls)], show(report)
    assert found[0].used_at == (found[0].file, line_of(cls, "q *= self.scaling"))
    assert f"chosen at {found[0].file}:{chosen}: `self.scaling = width ** -0.5`" in found[0].message
    assert found[0].data["origin"] == f"{found[0].file}:{chosen}"


def test_scale_a_numpy_call_chose_is_placed_where_it_was_chosen():
    cls = corpus.ScoresOverNumpyRootOfWidth
    report = check(cls, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "attention-scale"]
    chosen = line_of(cls, "self.root = np.sqrt(width)")
    assert [d.line for d in found] == [chosen], show(report)
    assert found[0].used_at == (found[0].file, line_of(cls, "scores = torch.matmul(q, k"))


def test_a_size_whose_root_is_taken_on_the_ops_line_is_not_where_the_factor_was_chosen():
    cls = corpus.ScoresOverRootOfWidthTakenInPlace
    report = check(cls, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "attention-scale"]
    assert [d.line for d in found] == [bug_line(cls)], show(report)
    assert "chosen at" not in found[0].message


def test_scale_passed_to_the_constructor_is_followed_to_the_call(tmp_path, monkeypatch):
    """A temperature handed to the attention's constructor by the block that builds it, in
    another file of the same folder: the call that passes the width's root is named."""
    (tmp_path / "parts.py").write_text(textwrap.dedent('''
        import torch
        import torch.nn as nn

        class Dot(nn.Module):
            def __init__(self, temperature):
                super().__init__()
                self.temperature = temperature

            def forward(self, q, k, v):
                att = torch.bmm(q, k.transpose(1, 2)) / self.temperature
                return torch.bmm(att.softmax(dim=-1), v)
    '''))
    (tmp_path / "block.py").write_text(textwrap.dedent('''
        import math
        import torch.nn as nn
        from parts import Dot

        class Block(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.heads, self.size = heads, width // heads
                self.qkv = nn.Linear(width, 3 * width)
                self.dot = Dot(temperature=math.sqrt(width))

            def forward(self, x):
                b, t, c = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                fold = lambda z: z.view(b, t, self.heads, self.size).transpose(1, 2).reshape(b * self.heads, t, self.size)
                out = self.dot(fold(q), fold(k), fold(v))
                return out.view(b, self.heads, t, self.size).transpose(1, 2).reshape(b, t, c)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import block
    report = st.check(block.Block, init={"width": "C", "heads": "H"}, inputs=["x=B,T,C"],
                      behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "attention-scale"]
    assert len(found) == 1 and found[0].file == "block.py" and found[0].line == 11, show(report)
    assert found[0].used_at[0].endswith("parts.py")
    assert "chosen at block.py:11: `self.dot = Dot(temperature=math.sqrt(width))`" in found[0].message


def test_no_origin_named_when_the_scale_is_written_on_its_line():
    cls = corpus.QueryScaledInPlaceAndScores
    report = check(cls, behaviour=False)
    found = [d for d in report.diagnostics if d.rule == "attention-scale"]
    assert len(found) == 1 and "chosen at" not in found[0].message, show(report)


def _textbook(cls):
    """The attention-textbook findings of the behaviour checks alone (before attention-scale's
    finding at the same line takes their place in a report)."""
    from shapetrace.base.dims import Dims
    from shapetrace.behaviour.checks import run_behaviour

    dims = Dims(getattr(cls, "DIMS", None))
    torch.manual_seed(0)
    model = cls(dims["C"], dims["H"]).eval()
    shape = [dims[n] for n in cls.INPUTS[0].split("=")[1].split(",")]
    result = run_behaviour(model, [torch.randn(*shape)], causal=None, dims=dims)
    return [d for d in result.diagnostics if d.rule == "attention-textbook"]


@pytest.mark.parametrize("name, part, words", [
    ("QueryScaledInPlaceAndScores", "scale", "scaled twice by 1/√d"),
    ("QueryScaledInPlaceByWidth", "scale", "scaled by 1/sqrt(C)"),
    ("RelativeBiasAddedTwice", "bias", "added to the attention scores twice"),
    ("KeyBiasOverQueries", "bias-axis", "is the same for every key"),
])
def test_the_textbook_reading_says_which_part_differs(name, part, words):
    cls = getattr(corpus, name)
    (found,) = _textbook(cls)
    assert found.line == bug_line(cls) and found.data["part"] == part, found.message
    assert words in found.message


def test_the_textbook_reading_names_each_factor_and_the_difference():
    (found,) = _textbook(corpus.QueryScaledInPlaceAndScores)
    lines = [line_of(corpus.QueryScaledInPlaceAndScores, text)
             for text in ("q *= self.scale", "scores = q @ k")]
    assert all(f"line {n}" in found.message for n in lines), found.message
    assert "differ from the textbook softmax(q·kᵀ/√d + the terms the code adds) by up to" in found.message


@pytest.mark.parametrize("name", ["QueryScaledInPlace", "QueryMulInPlace", "ScoresDividedInPlace",
                                  "SequenceFirstInPlace", "RelativeAndAlibi",
                                  "LandmarkPseudoInverse", "LinearAttentionSoftmaxed", "KeyBias",
                                  "KeyScaledInPlace", "ChunkScaledInPlaceEinsum",
                                  "ScoresScaledAndMaskedInPlace", "GroupedQueryViewScaledInPlace"])
def test_the_textbook_reading_is_quiet_on_correct_attention(name):
    assert _textbook(getattr(corpus, name)) == []


def test_a_term_the_softmax_removes_names_the_line_that_built_it():
    cls = corpus.KeyBiasOverQueries
    (found,) = _textbook(cls)
    built = line_of(cls, "per_key = self.key_bias.unsqueeze(-1)")
    assert f"built at line {built}" in found.message, found.message
    assert "(axis 3 of (5, 11, 7, 7), size 7)" in found.message, found.message


def test_a_root_written_without_parentheses_is_named_with_the_precedence_slip():
    scales = load(STYLES / "scales.py", "precedence")
    report = check(scales.RootByPowerWithoutParentheses, behaviour=False)
    (found,) = [d for d in report.diagnostics if d.rule == "attention-scale"]
    assert "scaled by 1/(d/2) instead of 1/sqrt(d)" in found.message, show(report)
    assert "binds tighter" in found.hint and "chosen at" not in found.message
