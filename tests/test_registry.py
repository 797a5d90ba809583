"""The rule registry: every rule is documented, fires on a buggy module at the right line, and
stays quiet on the corrected module. Runs the whole pipeline (check(): trace, rules, behaviour)
on the files students would point the CLI at."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.rules import trace_checks
from shapetrace.rules.page import rules_markdown
from shapetrace.rules.registry import RULES
from shapetrace.drive.targets import resolve_targets
import resolved

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).with_name("data") / "registry" / "models.py"


@pytest.mark.parametrize("name", list(RULES))
def test_rule_is_documented(name):
    rule = RULES[name]
    assert re.fullmatch(r"ST\d{3}", rule.code)
    assert rule.severity in ("error", "warning", "info")
    assert rule.summary and rule.explanation and rule.wrong and rule.right
    assert rule.wrong != rule.right


def test_codes_are_unique():
    assert len({r.code for r in RULES.values()}) == len(RULES)


def test_rules_page_is_generated_from_the_registry():
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert page == rules_markdown(), "docs/rules.md is stale: run python docs/generate.py"


@pytest.mark.parametrize("name", [n for n, r in RULES.items() if r.kind == "trace"])
def test_every_trace_rule_has_a_check(name):
    assert name in trace_checks()


@pytest.mark.parametrize("name", [n for n, r in RULES.items() if r.check is not None])
def test_every_named_check_exists(name):
    assert callable(trace_checks()[name])


def _changed_line(buggy: Path, fixed: Path) -> int:
    a = buggy.read_text().splitlines()
    b = fixed.read_text().splitlines()
    for tag, i1, _, _, _ in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            return i1 + 1
    raise AssertionError(f"{buggy} and {fixed} do not differ")


def _marked_line(path: Path, rule: str) -> int:
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if f"# BUG: {rule}" in text:
            return number
    raise AssertionError(f"no '# BUG: {rule}' marker in {path}")


_check_file = resolved.report


# rule -> (example folder, check options, where the bug shows relative to the fixed line)
EXAMPLE = "examples/{}/{}.py"
CASES = {
    "reshape-jumble": ("jumbled_heads", {}, 0),
    "reversed-transpose": ("transpose_T_3d", {}, 0),
    # the fix squeezes pred one line above the subtraction that broadcasts
    "silent-broadcast": ("loss_broadcast", {"inputs": ["x=B,T,C", "target=B"]}, 1),
    "softmax-axis": ("softmax_over_heads", {}, 0),
    "attention-scale": ("scale_by_sqrt_c", {}, 0),
    "discarded-result": ("discarded_masked_fill", {}, 0),
    "noncontiguous-view": ("view_after_transpose", {}, 0),
    "position-axis": ("positions_cut_by_batch", {}, 0),
}
INLINE = {
    "unnormalized-attention": ("MaskAfterSoftmax", "MaskBeforeSoftmax", {}),
    "causal-leak": ("TinyFillValue", "MaskBeforeSoftmax", {}),
    # batch-first inputs declared: with nothing declared, a forward that says nothing of its
    # layout and hands its input to a time-first nn.MultiheadAttention is read time-first
    "batch-leak": ("SeqFirstMHA", "BatchFirstMHA", {"inputs": ["x=B,T,C"]}),
    "nondeterministic-eval": ("DropoutAlwaysOn", "DropoutFollowsMode", {}),
    "non-finite": ("FullyMaskedRow", "FiniteMaskedRow", {}),
    "op-failed": ("KeyNotTransposed", "MaskBeforeSoftmax", {}),
    "input-mutated": ("PositionsAddedInPlace", "PositionsAdded", {}),
    "not-implemented": ("StarterPlaceholder", "MaskBeforeSoftmax", {}),
    "attention-textbook": ("PositionBiasTwice", "PositionBiasOnce", {}),
    # 6 query heads in 2 groups of 3 (the default H=11 is prime: only one key/value head fits)
    "head-grouping": ("TiledKVHeads", "InterleavedKVHeads", {"dims": {"H": 6}}),
    "constant-result": ("PoolingOverScoreAxis", "PoolingOverPositions", {}),
    "stateful-forward": ("ScaleFoldedIntoWeight", "ScaleAppliedToOutput", {}),
    "weight-without-effect": ("BranchGatedByZeros", "BranchAdded", {}),
    "mask-ignored": ("PaddingMaskNeverApplied", "PaddingMaskApplied",
                     {"inputs": ["x=B,T,C", "attention_mask=B,T:long:2"]}),
    "residual-of-itself": ("BlockInputOverwritten", "BlockInputKept", {}),
    "rotary-pairing": ("RotaryNeighboursTable", "RotaryHalvesTable", {}),
    # a table of pairs needs an even width (the default C=143 is odd)
    "position-frequencies": ("TableExponentPrecedence", "TableExponentGrouped", {"dims": {"C": 64}}),
    "inverted-norm": ("NormTimesItsRms", "NormOverItsRms", {}),
    "residual-twice": ("SkipAddedTwice", "SkipAddedOnce", {}),
    # at B = 2 (a size the halves of a head share) position-axis says nothing of the cut, and
    # the shuffled positions show it; at the probe sizes position-axis names the cut first
    "positions-ignored": ("RotaryTableCutToBatch", "RotaryTableCutToTokens",
                                 {"dims": {"B": 2, "H": 4, "d": 8}}),
    "residual-missing": ("BlockWithoutSkip", "BlockWithSkips", {}),
    "norm-epsilon": ("NormWithFlagForEps", "NormWithFlagByName", {}),
    "linear-collapse": ("FeedForwardWithoutActivation", "FeedForwardWithActivation", {}),
    "input-ignored": ("SummaryOfCausalEncoder", "SummaryOfEncoder", {}),
    "norm-bypassed": ("ContextBeforeNorm", "ContextAfterNorm", {}),
}


# rule -> (target, options that make it fire, options under which it is quiet): rules that no
# line of the module causes (the sizes chosen, the inputs fed)
BY_OPTIONS = {
    "annotation-mismatch": ("reference_models/m06_multi_head.py::MultiHeadAttention",
                            {"inputs": ["x=B,T,2*C"]}, {}),
    "dim-collision": ("examples/jumbled_heads/fixed.py", {"dims": {"B": 7}}, {}),
    # a module without a causal mask: right on its own, wrong against a causal solution
    "reference-mismatch": ("tests/data/reference/students.py::NotMasked",
                           {"reference": "reference_models/m06_multi_head.py::MultiHeadAttention"},
                           {}),
}


@pytest.mark.parametrize("name", list(RULES))
def test_every_rule_has_a_firing_and_a_quiet_case(name):
    """A new rule needs a buggy module that triggers it and a correct one that does not."""
    covered = [table for table in (CASES, INLINE, BY_OPTIONS) if name in table]
    assert covered, f"{name} has no case in CASES, INLINE or BY_OPTIONS of {__file__}"


def _cases():
    for rule, (folder, options, offset) in CASES.items():
        buggy, fixed = ROOT / EXAMPLE.format(folder, "buggy"), ROOT / EXAMPLE.format(folder, "fixed")
        yield pytest.param(rule, str(buggy), str(fixed), options,
                           _changed_line(buggy, fixed) + offset,
                           id=f"{rule}-{folder}")
    for rule, (bad, good, options) in INLINE.items():
        yield pytest.param(rule, f"{MODELS}::{bad}", f"{MODELS}::{good}", options,
                           _marked_line(MODELS, rule), id=f"{rule}-{bad}")


@pytest.mark.parametrize("rule, buggy, fixed, options, line", list(_cases()))
def test_rule_fires_on_the_buggy_module_at_its_line(rule, buggy, fixed, options, line):
    report = _check_file(buggy, **options)
    assert report.targets[0].error is None
    found = [d for d in report.diagnostics if d.rule == rule]
    assert found, f"{rule} not reported; got {[(d.rule, d.line) for d in report.diagnostics]}"
    assert line in {d.line for d in found}
    assert all(d.file and d.file.endswith(".py") for d in found)


@pytest.mark.parametrize("rule, buggy, fixed, options, line", list(_cases()))
def test_rule_is_quiet_on_the_corrected_module(rule, buggy, fixed, options, line):
    report = _check_file(fixed, **options)
    assert report.targets[0].error is None
    assert not [d for d in report.diagnostics if d.rule == rule]
    assert report.ok, [(d.rule, d.message) for d in report.errors]


@pytest.mark.parametrize("rule", list(BY_OPTIONS))
def test_rule_fires_with_its_options(rule):
    target, options, _ = BY_OPTIONS[rule]
    report = _check_file(target, **options)
    assert report.targets[0].error is None
    assert [d for d in report.diagnostics if d.rule == rule], \
        [(d.rule, d.line) for d in report.diagnostics]


@pytest.mark.parametrize("rule", list(BY_OPTIONS))
def test_rule_is_quiet_without_its_options(rule):
    target, _, options = BY_OPTIONS[rule]
    report = _check_file(target, **options)
    assert report.targets[0].error is None
    assert not [d for d in report.diagnostics if d.rule == rule]
    assert report.ok, [(d.rule, d.message) for d in report.errors]


def test_annotation_mismatch_names_the_argument_and_dim():
    report = _check_file("reference_models/m06_multi_head.py::MultiHeadAttention",
                         inputs=["x=B,T,2*C"])
    (diag,) = [d for d in report.diagnostics if d.rule == "annotation-mismatch"]
    assert "x" in diag.message and "286" in diag.message and "143" in diag.message
    assert diag.file and diag.line


def test_annotation_mismatch_is_quiet_on_the_right_width():
    report = _check_file("reference_models/m06_multi_head.py::MultiHeadAttention")
    assert report.ok and not report.diagnostics


def test_dim_collision_warns_and_names_the_dims():
    report = _check_file("examples/jumbled_heads/fixed.py", dims={"B": 7})
    (diag,) = [d for d in report.diagnostics if d.rule == "dim-collision"]
    assert diag.severity == "warning" and "B" in diag.message and "T" in diag.message


def test_dim_collision_is_quiet_at_the_probe_sizes():
    report = _check_file("examples/jumbled_heads/fixed.py")
    assert not [d for d in report.diagnostics if d.rule == "dim-collision"]


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "reference_models").glob("m*.py")))
def test_reference_models_trace_clean(path):
    for target in resolve_targets(path, root=ROOT):
        report = st.check(target.cls, target=target.display)
        assert report.targets[0].error is None, report.targets[0].error
        assert report.ok, [(d.rule, d.line, d.message) for d in report.errors]
