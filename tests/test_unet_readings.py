"""Diffusion-style modules built with nothing declared: an image side read from the
constructor's own name for it, the set of levels a U-Net gives attention read from the code that
tests sizes against it (every level is in it), a timestep beside the data, and a module far too
big at the sizes shapetrace chose refused before it is built. Signals padded before a
convolution read channels first; a decoder's second sequence, guessed as long as its own, is
never the ground of a causal-leak error."""

from __future__ import annotations

from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.base.dims import Dims
from shapetrace.drive.infer import infer_init, infer_inputs
from shapetrace.drive.init_reads import BUILT_SIDE, LEVELS
import resolved

DATA = Path(__file__).parent / "data"


def _target(path: str):
    return resolved.target(DATA / path)


def test_a_unet_is_built_at_an_image_side_with_attention_at_every_level():
    target = _target("unets/tiny_unet.py::TinyUNet")
    notes: list[str] = []
    init = infer_init(target.cls, Dims(), notes=notes)
    assert init["resolution"] == BUILT_SIDE and init["attn_resolutions"] == list(LEVELS)
    assert any("tests sizes against it" in n for n in notes), notes
    assert [str(s) for s in infer_inputs(target.cls, Dims())] == ["x=B,T,C", "t=B:long:1000"]
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(f"(B, 143, {BUILT_SIDE}, {BUILT_SIDE})" in n for n in result.notes), result.notes


def test_a_module_too_big_at_the_chosen_width_is_checked_at_a_smaller_one():
    target = _target("unets/tiny_unet.py::WideStack")
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is None, result.error
    assert any("too many parameters to check" in n and "(H=2)" in n for n in result.notes)


def test_a_module_too_big_at_any_width_is_refused_before_it_is_built():
    target = _target("unets/tiny_unet.py::FixedHugeTable")
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is not None and "too many to check here" in result.error, result.error


def test_a_signal_padded_before_its_convolution_is_read_channels_first():
    target = _target("signals/signals.py::PaddedFeedForward")
    report = st.check(target.cls, target=target.display)
    assert report.targets[0].error is None and not report.diagnostics, report.diagnostics
    assert any("channels first" in n for n in report.targets[0].notes)


def test_a_second_sequence_guessed_aligned_is_no_ground_for_a_causal_leak_error():
    target = _target("signals/signals.py::SignalDecoder")
    report = st.check(target.cls, target=target.display)
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.errors, [(d.rule, d.message) for d in report.errors]
    leaks = [d for d in report.diagnostics if d.rule == "causal-leak"]
    assert all("assumed: h" in d.message for d in leaks), leaks
    # h_mask.unsqueeze(2) * x_mask.unsqueeze(-1): both size-1 axes inserted, a table asked for
    assert not [d for d in report.diagnostics if d.rule == "silent-broadcast"], report.diagnostics


@pytest.mark.parametrize("inputs", [["x=B,C,T", "x_mask=B,1,T:mask-mul", "h=B,C,T", "h_mask=B,1,T:mask-mul"]])
def test_declared_as_aligned_the_second_sequence_is_still_read_whole(inputs):
    """Declared (both T), the run says which input the causal mask speaks for: the causally
    masked self-attention depends on ``x`` alone, and ``h``, read whole by the cross-attention
    (an encoder's output), is not judged for the future; a note says so."""
    target = _target("signals/signals.py::SignalDecoder")
    report = st.check(target.cls, target=target.display, inputs=inputs, causal=True)
    assert not [d for d in report.diagnostics if d.rule == "causal-leak"], report.diagnostics
    assert any("judged through x" in n and "h, h_mask never reach it" in n
               for n in report.targets[0].notes), report.targets[0].notes


def test_a_timestep_embedding_made_in_float32_by_hand_does_not_stop_the_behaviour_checks():
    """``t.float()`` and ``dtype=torch.float32`` give float64 in the checks' float64 re-runs, as
    they give the module's own dtype in an ordinary run."""
    target = _target("unets/tiny_unet.py::TinyUNet")
    result = st.check(target.cls, target=target.display).targets[0]
    assert not [n for n in result.notes if "raised while re-running" in n], result.notes
    assert "batch-leak" in result.checks["ran"], result.checks
