"""Styles nobody here wrote before for reversed-transpose, unnormalized-attention, head-grouping,
annotation-mismatch and reference-mismatch (tests/data/styles/hunt6_*.py), plus dim-collision at
the probe sizes and at the user's own, and a constructor that refuses an odd probe size. Every
correct module is quiet (no error, no warning); every buggy twin is found once by its rule at
its ``# BUG`` line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from style_corpus import STYLES, assert_found_once, bug_line, check, load, modules, show
import shapetrace as st
from shapetrace.rules.registry import RULES

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(STYLES.glob("hunt6_*.py"))
CORRECT = list(modules(FILES, "correct", "styles6"))
BUGGY = list(modules(FILES, "buggy", "styles6"))


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # REFERENCE paths, and file paths in findings, are relative to it


def run(cls, **extra):
    reference = getattr(cls, "REFERENCE", None)
    return check(cls, **({"reference": reference} if reference else {}), **extra)


def test_the_corpus_is_there():
    assert len(FILES) == 5
    assert len(CORRECT) >= 20 and len(BUGGY) >= 10
    assert {p.values[0].BUG for p in BUGGY} == {
        "reversed-transpose", "unnormalized-attention", "head-grouping", "annotation-mismatch",
        "reference-mismatch"}


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_style_is_quiet(cls):
    report = run(cls)
    assert report.targets[0].error is None, report.targets[0].error
    loud = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not loud, show(report)
    assert report.ok
    if getattr(cls, "REFERENCE", None):
        assert any("compared with the reference" in n for n in report.targets[0].notes)


@pytest.mark.parametrize("cls", BUGGY)
def test_buggy_twin_is_found_at_its_line(cls):
    if not getattr(cls, "REFERENCE", None):
        assert_found_once(cls)
        return
    report = run(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    found = [d for d in report.diagnostics if d.rule == cls.BUG]
    assert len(found) == 1, show(report)
    assert found[0].line == bug_line(cls), show(report)
    assert found[0].severity == RULES[cls.BUG].severity and not report.ok


# --- what the misses and unclear messages found here were -------------------------------------

def test_stacked_copies_are_read_like_repeat():
    """``torch.stack([v] * G, dim=2).flatten(2, 3)`` on (B, T, Hkv, d) tiles the key/value heads;
    the finding names the stack's line, and the same stack at the inner axis is quiet."""
    gqa = load(STYLES / "hunt6_gqa.py", "styles6")
    report, found = assert_found_once(gqa.StackedCopiesOutermost)
    assert found.op == "torch.stack", show(report)
    assert not [d for d in check(gqa.StackedCopiesInnermost).diagnostics if d.rule == "head-grouping"]


def test_stack_of_different_tensors_is_not_read_as_copies():
    """q, k and v stacked and unbound: no copy index, nothing to say about grouping."""

    class StackedQKV(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(78, 78) for _ in range(3))

        def forward(self, x):
            B, T, _ = x.shape
            qkv = torch.stack([self.q(x), self.k(x), self.v(x)], dim=0).view(3, B, T, 6, 13)
            q, k, v = qkv.transpose(2, 3).unbind(0)
            return (q @ k.transpose(-2, -1) / 13 ** 0.5).softmax(-1) @ v

    with st.trace() as t:
        StackedQKV()(torch.randn(5, 7, 78))
    assert not [d for d in t.diagnostics if d.rule == "head-grouping"], t.diagnostics


def test_optional_annotation_names_the_dim():
    """``Optional[Bool[Tensor, "*#batch #q k"]]``: beartype's reason for a union names no dim; the
    message is worked out from the shape and the dims bound so far."""
    annot = load(STYLES / "hunt6_annot.py", "styles6")
    report, found = assert_found_once(annot.MaskOfTheWrongLength)
    assert found.message == "mask: dim q is 8, expected 7 as set by q", show(report)
    assert "<class" not in found.message + found.hint
    assert "q is (*batch, q, d)" in found.hint  # a variadic axis shown with its star


def test_renormalised_over_the_queries_points_at_the_mask_and_says_how():
    norm = load(STYLES / "hunt6_norm.py", "styles6")
    report, found = assert_found_once(norm.RenormalisedOverQueries)
    assert "att.sum(dim=-1, keepdim=True)" in found.hint


def test_a_fused_key_value_pair_is_matched_to_separate_weights():
    """A (2C, C) key/value projection beside a separate query is the reference's key and value
    weights joined: matched (either order, blocks or per head), the same function, no finding."""
    ref = load(STYLES / "hunt6_reference.py", "styles6")
    result = run(ref._FusedKeyValue).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("your to_kv.weight split into the reference's key.weight, value.weight" in n
               for n in result.notes), result.notes


def test_a_fused_key_value_pair_that_computes_otherwise_differs():
    ref = load(STYLES / "hunt6_reference.py", "styles6")

    class Jumbled(ref._FusedKeyValue):
        def forward(self, x):
            B, T, C = x.shape
            k, v = self.to_kv(x).chunk(2, dim=-1)
            q, k, v = (t.reshape(B, self.h, T, C // self.h) for t in (self.to_q(x), k, v))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.to_out(out.transpose(1, 2).reshape(B, T, C))

    result = run(Jumbled).targets[0]
    assert result.error is None, result.error
    assert [d.rule for d in result.diagnostics if d.rule == "reference-mismatch"] == \
        ["reference-mismatch"], result.diagnostics


# --- dim-collision ----------------------------------------------------------------------------

def _collisions(report_or_trace):
    return [d for d in report_or_trace.diagnostics if d.rule == "dim-collision"]


def test_probe_sizes_made_equal_are_one_warning_with_the_hidden_bugs():
    transpose = load(STYLES / "hunt6_transpose.py", "styles6")
    report = st.check(transpose.BatchedMT, init={"d_model": "C"}, inputs=["x=B,T,C"],
                      dims={"B": 7}, behaviour=False)
    (found,) = _collisions(report)
    assert found.severity == "warning" and "B and T are both 7" in found.message
    assert "B=" in found.hint and "T=7" not in found.hint
    assert report.ok  # a warning, not an error


def test_distinct_probe_sizes_never_collide():
    for p in CORRECT:
        cls = p.values[0]
        if getattr(cls, "DIMS", None):  # the grouped-query ones run at H=6
            assert not _collisions(check(cls, behaviour=False)), cls.__name__


def test_user_sizes_where_heads_and_head_size_are_equal():
    """A small GPT at its own sizes: n_embd=64, n_head=8, so H = d = 8; the warning says the
    numbers print as numbers and which bugs can hide."""
    transpose = load(STYLES / "hunt6_transpose.py", "styles6")
    model = transpose.PermuteLastTwo(64, 8).eval()
    with st.trace(model, dims={"B": 4, "T": 10, "C": 64, "H": 8}) as t:
        model(torch.randn(4, 10, 64))
    (found,) = _collisions(t)
    assert "H and d are both 8" in found.message
    assert "the number 8" in found.message and "heads and head size" in found.message
    assert not [d for d in t.diagnostics if d.severity == "error"]


def test_user_sizes_all_distinct_are_quiet():
    transpose = load(STYLES / "hunt6_transpose.py", "styles6")
    model = transpose.PermuteLastTwo(96, 6).eval()  # H=6, d=16
    with st.trace(model, dims={"B": 4, "T": 10, "C": 96, "H": 6}) as t:
        model(torch.randn(4, 10, 96))
    assert not _collisions(t) and not t.diagnostics, t.diagnostics


def test_a_collision_no_traced_axis_has_is_not_reported():
    """B = T = 3 declared, but the traced code has no axis of size 3: nothing can be confused."""
    with st.trace(dims={"B": 3, "T": 3}) as t:
        (torch.randn(5, 7) @ torch.randn(7, 11)).softmax(-1)
    assert not _collisions(t)


# --- a constructor that refuses an odd probe size --------------------------------------------

class SinusoidalPositions(nn.Module):
    """Sinusoidal tables need an even width (Whisper's encoder checks the same)."""

    def __init__(self, d_model, block_size):
        super().__init__()
        if d_model % 2:
            raise ValueError(f"d_model must be divisible by 2 for sinusoidal positions, got {d_model}")
        pos = torch.arange(block_size)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model)
        self.register_buffer("table", torch.cat([pos.sin(), pos.cos()], dim=-1))

    def forward(self, x):
        return x + self.table[: x.shape[1]]


def test_odd_probe_width_is_a_target_error_that_says_which_dims_to_give():
    (result,) = st.check(SinusoidalPositions, inputs=["x=B,T,C"]).targets
    assert result.error is not None and "\n" not in result.error
    assert "ValueError" in result.error and "got 143" in result.error
    assert "C=143 is odd" in result.error and "--dims d=8, which makes C=88" in result.error
    assert not result.diagnostics  # not the module's bug
    (again,) = st.check(SinusoidalPositions, inputs=["x=B,T,C"], dims={"d": 8}).targets
    assert again.error is None and again.ok


def test_an_odd_size_the_error_does_not_blame_gets_no_advice():
    class Other(nn.Module):
        def __init__(self, d_model, reason):
            super().__init__()
            raise ValueError(reason)

    for reason in ("unsupported activation", "n_layers must be divisible by 2, got 3"):
        (other,) = st.check(Other, init={"reason": reason}, inputs=["x=B,T,C"]).targets
        assert reason in other.error
        assert "is odd" not in other.error and "--dims" not in other.error


# --- head-grouping's rewritten line ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["TimeMajorTiledRepeat", "StackedCopiesOutermost", "TorchTile"])
def test_head_grouping_rewrite_pasted_back_makes_the_module_clean(name, tmp_path):
    import importlib.util

    gqa = load(STYLES / "hunt6_gqa.py", "styles6")
    (found,) = [d for d in check(getattr(gqa, name), behaviour=False).diagnostics
                if d.rule == "head-grouping"]
    number, _, fixed = found.hint.partition(": ")[2].partition("  ")
    assert int(number) == found.line
    lines = (STYLES / "hunt6_gqa.py").read_text().splitlines()
    old = lines[found.line - 1]
    lines[found.line - 1] = old[:len(old) - len(old.lstrip())] + fixed
    copy = tmp_path / "hunt6_gqa.py"
    copy.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"fixed_hunt6_{name}", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = check(getattr(module, name), behaviour=False)
    assert not [d for d in report.diagnostics if d.rule == "head-grouping"], show(report)
    assert not report.errors, show(report)


def test_flat_projection_tiled_gets_no_rewrite_that_copies_features():
    """``t.repeat(1, 1, G)`` on a flat (B, T, Hkv*d) projection: repeat_interleave along that axis
    would copy single features, not heads, so the hint says to split the heads off first."""
    gqa = load(STYLES / "hunt6_gqa.py", "styles6")
    report, found = assert_found_once(gqa.FlatProjectionTiled)
    assert "repeat_interleave(self.h" not in found.hint and "split the 2 heads" in found.hint
    assert found.message.startswith("t is repeated as whole blocks")


def test_a_list_of_copies_is_named_by_its_tensor():
    gqa = load(STYLES / "hunt6_gqa.py", "styles6")
    report, found = assert_found_once(gqa.StackedCopiesOutermost)
    assert found.message.startswith("v is repeated as whole blocks"), found.message
