"""The style corpus (tests/data/styles/): attention, and the models and checks around it, written
the ways textbooks, tutorials, blogs, libraries, papers and students write it. Every file is
there with the modules it declares; every correct module is quiet, with the behaviour checks and
without them (no error, and no warning but the ones it declares ``ALLOWED``); every buggy twin is
found once by its ``BUG`` rule at its ``# BUG`` line, with the rule's severity and a hint.

What a corpus module declares (``INPUTS``, ``INIT``, ``DIMS``, ``REFERENCE``, ``ALLOWED``,
``BUG``, ``FOUND_AT``) is described in tests/style_corpus.py. The files' own subjects (a rule's
messages, the command line with nothing declared, the behaviour checks' notes) are tested in
test_windows.py, test_head_grouping.py, test_behaviour_styles.py, test_models_nothing_declared.py,
test_tutorials_nothing_declared.py and the rule's own test files.
"""

from __future__ import annotations

from pathlib import Path

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest

from style_corpus import STYLES, assert_found_once, check, modules, show

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(STYLES.glob("*.py"))
CORRECT = list(modules(FILES, "correct", "corpus"))
BUGGY = list(modules(FILES, "buggy", "corpus"))

#: What each corpus file holds: at least this many correct modules and buggy twins, and exactly
#: these rules in its twins' ``BUG``. A new file, or a twin of another rule, is added here.
CONTENTS: dict[str, tuple[int, int, set[str]]] = {
    "annotated": (5, 4, {"annotation-mismatch"}),
    "attention_properties": (9, 5, {"attention-scale", "attention-textbook", "softmax-axis",
                                    "unnormalized-attention"}),
    "around_attention": (7, 9, {"batch-leak", "discarded-result", "input-mutated", "non-finite",
                                "noncontiguous-view", "nondeterministic-eval", "position-axis",
                                "reversed-transpose", "silent-broadcast"}),
    "batch_independence": (7, 5, {"batch-leak"}),
    "behaviour_bugs": (0, 9, {"batch-leak", "causal-leak", "input-mutated",
                              "nondeterministic-eval"}),
    "behaviour_lookalikes": (28, 0, set()),
    "blogs_and_libraries": (12, 7, {"attention-scale", "causal-leak", "discarded-result",
                                    "reshape-jumble", "softmax-axis"}),
    "book_ch3": (5, 4, {"discarded-result", "noncontiguous-view", "reshape-jumble",
                        "reversed-transpose"}),
    "broadcast_biases": (10, 2, {"silent-broadcast"}),
    "broadcasts": (6, 2, {"silent-broadcast"}),
    "causal_streaming": (14, 10, {"causal-leak"}),
    "discarded": (10, 6, {"discarded-result"}),
    "distance_biases": (4, 2, {"attention-textbook"}),
    "distance_attention": (3, 2, {"attention-textbook"}),
    "efficient": (12, 0, set()),
    "grouped": (12, 9, {"head-grouping"}),
    "grouped_layouts": (6, 4, {"head-grouping"}),
    "head_reshapes": (8, 7, {"noncontiguous-view", "op-failed", "reshape-jumble"}),
    "hidden_leaks": (0, 3, {"batch-leak", "causal-leak"}),
    "in_models": (9, 0, set()),
    "inverted_masks": (4, 4, {"causal-leak"}),
    "infinite_masks": (8, 4, {"non-finite"}),
    "key_transposes": (7, 4, {"reversed-transpose"}),
    "layouts": (14, 0, set()),
    "lm_tutorial": (4, 2, {"causal-leak", "position-axis"}),
    "lookalikes": (20, 0, set()),
    "model_parts": (12, 0, set()),
    "more": (6, 0, set()),
    "norms": (7, 3, {"inverted-norm"}),
    "mixed_weights": (4, 2, {"attention-scale", "unnormalized-attention"}),
    "padding_masks": (5, 4, {"attention-textbook"}),
    "randomness_and_inputs": (7, 6, {"input-mutated", "nondeterministic-eval"}),
    "reference_match": (4, 4, {"reference-mismatch"}),
    "scales": (11, 7, {"attention-scale"}),
    "seq2seq": (2, 1, {"causal-leak"}),
    "softmax_axes": (7, 4, {"softmax-axis"}),
    "spatial_weights": (4, 1, {"softmax-axis"}),
    "textbook": (10, 0, set()),
    "university_tutorial": (4, 3, {"attention-scale", "reshape-jumble", "softmax-axis"}),
    "variants": (18, 0, set()),
    "variants_bugs": (0, 34, {"attention-scale", "batch-leak", "causal-leak", "discarded-result",
                              "head-grouping", "non-finite", "nondeterministic-eval", "op-failed",
                              "reshape-jumble", "softmax-axis", "unnormalized-attention"}),
    "vision": (5, 0, set()),
    "weight_sums": (8, 4, {"unnormalized-attention"}),
    "wide_heads": (1, 0, set()),
    "windows": (8, 5, {"reshape-jumble"}),
}


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # REFERENCE paths, and file paths in findings, are relative to it


def _declared(params, path: Path) -> list:
    return [p.values[0] for p in params if p.id.startswith(f"{path.stem}-")]


def test_every_file_listed_is_there():
    assert sorted(CONTENTS) == [path.stem for path in FILES]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_the_corpus_is_there(path):
    correct, buggy = _declared(CORRECT, path), _declared(BUGGY, path)
    assert correct or buggy, f"{path.name} declares no module (a class with INPUTS)"
    assert path.stem in CONTENTS, f"add {path.stem!r} to CONTENTS"
    at_least_correct, at_least_buggy, rules = CONTENTS[path.stem]
    assert len(correct) >= at_least_correct and len(buggy) >= at_least_buggy, \
        (len(correct), len(buggy))
    found_by = {cls.BUG for cls in buggy}
    assert found_by == rules, f"{path.stem}'s twins are found by {sorted(found_by)}: update CONTENTS"


def _assert_only_the_allowed_warnings(cls, report) -> None:
    """No error; the warnings are exactly the ones the class declares ``ALLOWED``, each saying
    what it declares."""
    allowed = getattr(cls, "ALLOWED", {})
    loud = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert [(d.rule, d.severity) for d in loud] == [(rule, "warning") for rule in allowed], \
        show(report)
    for d in loud:
        assert allowed[d.rule] in d.message, show(report)
    assert report.ok


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_module_is_quiet(cls):
    report = check(cls)
    result = report.targets[0]
    assert result.error is None, result.error
    _assert_only_the_allowed_warnings(cls, report)
    if getattr(cls, "REFERENCE", None):
        assert any("compared with the reference" in n for n in result.notes), result.notes


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_module_is_quiet_without_the_behaviour_checks(cls):
    """The trace rules alone say nothing either, at no severity (head-grouping and
    silent-broadcast, which only warn, included): the findings are the ALLOWED warnings."""
    report = check(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    allowed = getattr(cls, "ALLOWED", {})
    assert [(d.rule, d.severity) for d in report.diagnostics] == \
        [(rule, "warning") for rule in allowed], show(report)
    _assert_only_the_allowed_warnings(cls, report)


@pytest.mark.parametrize("cls", BUGGY)
def test_buggy_twin_is_found_once_at_its_line(cls):
    report, found = assert_found_once(cls)
    assert report.ok == (found.severity != "error"), show(report)
