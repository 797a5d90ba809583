"""Windows, patches and chunks: an axis cut into factors by a literal size keeps its factors tied
to it, named relative to it (``Y/3``, never ``T`` for a window of 7), and merging them back in
the wrong order is a reshape-jumble at the user's line. The correct styles and their buggy twins
live in tests/data/styles/windows.py (also run by tests/test_style_corpus.py).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from pathlib import Path

import einops  # noqa: F401 - the corpus needs it (a test extra)
import pytest
import torch

import shapetrace as st
from shapetrace.frontends.cli import main
from shapetrace.base.dims import Dims
from shapetrace.naming.reshapes import reshape_axes
from shapetrace.naming.axes import format_axes

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILE = Path(__file__).with_name("data") / "styles" / "windows.py"


def _load():
    spec = importlib.util.spec_from_file_location("styles_windows", FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


W = _load()
CORRECT = [pytest.param(c, id=c.__name__) for c in vars(W).values()
           if isinstance(c, type) and hasattr(c, "INPUTS") and not hasattr(c, "BUG")]
BUGGY = [pytest.param(c, id=c.__name__) for c in vars(W).values()
         if isinstance(c, type) and hasattr(c, "BUG")]


def _check(cls, behaviour=False):
    return st.check(cls, init=cls.INIT, inputs=cls.INPUTS, dims=cls.DIMS, behaviour=behaviour)


def _bug_line(cls) -> int:
    lines, start = inspect.getsourcelines(cls)
    return next(start + i for i, text in enumerate(lines) if text.rstrip().endswith("# BUG"))


def _show(report) -> str:
    return "\n".join(f"{d.rule} {d.line}: {d.message} | {d.hint}" for d in report.diagnostics)


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_window_patch_and_chunk_styles_are_clean(cls):
    report = _check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.rule == "reshape-jumble"], _show(report)
    assert report.ok, _show(report)


@pytest.mark.parametrize("cls", BUGGY)
def test_merging_the_pieces_back_in_the_wrong_order_is_a_jumble_at_its_line(cls):
    report = _check(cls)
    found = [d for d in report.diagnostics if d.rule == "reshape-jumble"]
    assert [(d.line, d.severity) for d in found] == [(_bug_line(cls), "error")], _show(report)
    assert Path(found[0].file).resolve() == FILE.resolve()
    assert "only split or merge neighbouring axes" in found[0].message


@pytest.mark.parametrize("cls, message, hint", [
    pytest.param(W.SwinReverseWithoutPermute,
                 "view (B*Y/3*X/3, 3, 3, C) -> (B, Y, X, C) mixes Y/3 and X/3 into Y",
                 "Split the merged axes apart with .view(B, Y/3, X/3, 3, 3, C), then "
                 ".transpose(2, 3), then .reshape(B, Y, X, C).", id="swin-named"),
    pytest.param(W.SquareWindowsReverseWithoutPermute,
                 "view (B*2*2, 4, 4, C) -> (B, 8, 8, C) mixes 2 and 4 into 8",
                 "Split the merged axes apart with .view(B, 2, 2, 4, 4, C), then "
                 ".transpose(2, 3), then .reshape(B, 8, 8, C).", id="swin-square-unnamed"),
    pytest.param(W.ChunkedMergeWithoutPermute,
                 "reshape (B, T/4, H, 4, d) -> (B, T, C) mixes T/4 and H into T",
                 "Move the axes first: .transpose(2, 3), then .reshape(B, T, C)", id="chunks"),
    pytest.param(W.ViTPatchWithoutPermute, "reshape (B, 3, Y, X) -> (B, N, P) mixes 3 and Y into N",
                 "Split or merge neighbouring axes only", id="patches"),
])
def test_message_and_hint_speak_in_the_users_names(cls, message, hint):
    report = _check(cls)
    found = [d for d in report.diagnostics if d.rule == "reshape-jumble"]
    assert found and found[0].message.startswith(message), _show(report)
    assert found[0].hint.startswith(hint), found[0].hint


def test_pixel_shuffle_gives_no_fix_when_two_orders_read_alike():
    """(B, Y, X, 2, 2, C) to (B, 2*Y, 2*X, C): 2*Y could be (2, Y) or (Y, 2); the names do not
    say which, so the hint names no permute and there is no corrected line."""
    report = _check(W.PixelShuffleWithoutPermute)
    found = [d for d in report.diagnostics if d.rule == "reshape-jumble"]
    assert len(found) == 1 and found[0].data.get("fix") is None, _show(report)
    assert ".permute" not in found[0].hint


# --- names: relative to the axis cut, never borrowed from a size --------------------------------

def _window_trace(Y, X, w, dims):
    x = torch.randn(5, Y, X, 143)
    with st.trace(dims=dims) as t:
        W.window_reverse(W.window_partition(x, w) * 2, w, Y, X)
    return t


def test_window_of_seven_does_not_read_as_T():
    """T = 7 by default; a window of 7 on a 14 x 21 image is 7, and the window counts are
    Y/7 and X/7: no false T."""
    t = _window_trace(14, 21, 7, {"Y": 14, "X": 21})
    shapes = [t.shape_of(r.outputs[0]) for r in t.records if r.op.startswith("Tensor.")]
    assert "(B, Y/7, 7, X/7, 7, C)" in shapes
    assert "(B*Y/7*X/7, 7, 7, C)" in shapes
    assert shapes[-1] == "(B, Y, X, C)"  # merged back whole: the image's own names again
    assert not any("T" in s for s in shapes), shapes


def test_declared_window_size_names_the_window():
    t = _window_trace(6, 12, 3, {"Y": 6, "X": 12, "w": 3})
    shapes = [t.shape_of(r.outputs[0]) for r in t.records if r.op.startswith("Tensor.")]
    assert "(B*Y/w*X/w, w, w, C)" in shapes
    assert [d.rule for d in t.diagnostics] == []


def test_chunks_of_a_declared_sequence_read_relative_to_it():
    x = torch.randn(5, 12, 143)
    with st.trace(dims={"T": 12}) as t:
        x.view(5, 3, 4, 143).reshape(5, 12, 143)
    assert [t.shape_of(r.outputs[0]) for r in t.records] == ["(B, T/4, 4, C)", "(B, T, C)"]


# --- reshape_axes on tied pieces -----------------------------------------------------------------

DIMS = Dims({"Y": 8, "X": 8 * 3})


def test_pieces_merged_back_in_order_are_the_factor_itself():
    y = ((8, "8"),)
    split = reshape_axes((y,), (2, 4), DIMS)
    assert split.ok and [a[0][0] for a in split.axes] == [2, 4]
    assert reshape_axes(split.axes, (8,), DIMS).axes == (y,)  # the very factor, fused
    finer = reshape_axes(split.axes, (2, 2, 2), DIMS)  # a window cut again, alone: legal
    assert finer.ok
    assert reshape_axes(finer.axes, (8,), DIMS).axes == (y,)


def test_a_piece_is_not_cut_to_continue_pieces_of_another_axis():
    """(Y/4, X/4, 4, 4) read as (8, 8): the first 8 would take Y/4, X/4 and half of Y's
    window. Sizes allow it (2*2*2); the tied factors do not."""
    image = reshape_axes((((8, "8"),), ((8, "8"),)), (2, 4, 2, 4), DIMS)
    moved = tuple(image.axes[i] for i in (0, 2, 1, 3))  # the windows' permute
    assert reshape_axes(moved, (8, 8), DIMS).ok is False
    assert reshape_axes(image.axes, (8, 8), DIMS).ok  # in their order: legal
    assert reshape_axes(moved, (4, 16), DIMS).ok  # (nY*nX, w*w): legal, nothing cut


def test_named_cuts_stay_plain_names():
    """C -> (H, d) and 3*C -> (3, C) are explained by names: pieces only where names are not."""
    d = Dims()
    check = reshape_axes((((3 * d["C"], "3*C"),),), (3, d["H"], d["d"]), d)
    assert format_axes(check.axes, d) == "(3, H, d)"
    assert all(type(name) is str for axis in check.axes for _, name in axis)


# --- the command line ----------------------------------------------------------------------------

def test_cli_flags_swin_without_permute_at_declared_sizes(capsys):
    code = main([f"{FILE}::SwinReverseWithoutPermute", "--init", "dim=C,num_heads=H,height=Y,width=X",
                 "--input", "x=B,L,C", "--dims", "Y=6,X=12,L=72", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    found = [d for d in out["targets"][0]["diagnostics"] if d["rule"] == "reshape-jumble"]
    assert [d["line"] for d in found] == [_bug_line(W.SwinReverseWithoutPermute)]
    assert "(B*Y/3*X/3, 3, 3, C)" in found[0]["message"]


def test_cli_passes_the_correct_swin_block(capsys):
    code = main([f"{FILE}::SwinBlock", "--init",
                 "dim=C,num_heads=H,height=Y,width=X,window_size=3,shift_size=1",
                 "--input", "x=B,L,C", "--dims", "Y=6,X=12,L=72", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert out["targets"][0]["error"] is None
    assert code == 0, out["targets"][0]["diagnostics"]
