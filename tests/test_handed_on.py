"""Sizes and inputs read where a module's own code hands them on, and failures on guessed
inputs that a reading gets past: no verdict from a guess (tests/data/handed/blocks.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import shapetrace as st
from shapetrace.drive.targets import resolve_targets
from shapetrace.drive.usage import meaning_by_use
import resolved

DATA = Path(__file__).parent / "data" / "handed"
ROOT = Path(__file__).parent.parent


_target = partial(resolved.target, DATA / "blocks.py")
_check = partial(resolved.result, DATA / "blocks.py")
_errors = resolved.errors


def test_widths_handed_to_a_helper_method_are_read_there():
    cls = _target("SplitBuildBlock").cls
    assert meaning_by_use(cls, "width_out") == "C"
    result = _check("SplitBuildBlock")
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("width_out read as the model width" in n for n in result.notes), result.notes


@pytest.mark.parametrize("cls, read", [
    ("StyledBlock", "style read as (B, 24)"),      # through a block of the file's own
    ("BareNorm", "d read as the model width (C)"),  # a bare d that does not fit as a head size
])
def test_an_input_or_a_size_is_read_where_the_code_uses_it(cls, read):
    result = _check(cls)
    assert result.error is None, result.error
    assert not _errors(result)
    assert any(read in n for n in result.notes), result.notes


def test_a_failure_another_reading_gets_past_is_never_op_failed():
    """Read as a sequence of one beside the data (B, 1, C), the time fits the per-channel
    rates and the module is checked, saying so; never an op-failed finding from the guess."""
    result = _check("DecayGate")
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"]
    assert any(n.startswith("t read as a vector per sample as a sequence of one") and
               "--input t=" in n for n in result.notes), result.notes


def test_the_same_module_with_its_inputs_declared_runs_clean():
    result = _check("DecayGate", inputs=["t=B,1,1", "x=B,T,C"])
    assert result.error is None and not _errors(result)


@pytest.mark.parametrize("inputs", [None, ["x=B,T,C"]])
def test_a_failure_no_reading_gets_past_stays_a_finding(inputs):
    result = _check("FixedWidthHead", inputs=inputs)
    assert result.error is None
    assert _errors(result) == [("op-failed", 91)]


def _sizes(cls: str, **kwargs):
    (target,) = resolve_targets(f"{DATA / 'sizes.py'}::{cls}", root=ROOT)
    return st.check(target.cls, target=target.display, **kwargs).targets[0]


@pytest.mark.parametrize("cls", ["PositionTable", "TokensAsImage", "FourierPositions"])
def test_a_size_forward_takes_as_a_number_is_passed_one(cls):
    result = _sizes(cls)
    assert result.error is None, result.error
    assert not _errors(result)


def test_the_sizes_passed_fit_the_tokens_and_the_batch():
    from shapetrace.drive.infer import infer_inputs
    from shapetrace.base.dims import Dims

    (target,) = resolve_targets(f"{DATA / 'sizes.py'}::TokensAsImage", root=ROOT)
    dims = Dims()
    height, width = infer_inputs(target.cls, dims)[1:]
    assert (height.value, width.value) == (1, dims["T"])  # one row of T tokens
    (target,) = resolve_targets(f"{DATA / 'sizes.py'}::FourierPositions", root=ROOT)
    assert infer_inputs(target.cls, dims)[0].value == dims["B"]


def test_a_length_forward_uses_as_a_tensor_is_not_a_size():
    """``length.view(-1, 1)``: a tensor of one value per sample, never a number."""
    result = _sizes("LengthsMask")
    assert result.error is None, result.error
    viewed = next(r for r in result.to_json()["trace"] if r["source"].startswith("length.view"))
    assert viewed["inputs"] == ["(B,)"], viewed


def test_a_config_field_compared_with_names_takes_the_first_and_one_the_heads_split_the_width():
    result = _check("KindSwitched")
    assert result.error is None, result.error
    assert not _errors(result)
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_init

    dims = Dims()
    config = infer_init(_target("KindSwitched").cls, dims)["config"]
    assert (config.mixer, config.inner) == ("linear", dims["C"])


def test_an_attribute_set_on_a_path_the_guess_did_not_take_is_a_target_error():
    result = _check("TwoPaths")
    assert not result.diagnostics
    assert result.error and "self.proj" in result.error and "--init" in result.error


def test_the_same_module_built_on_the_path_that_sets_it_is_checked():
    result = _check("TwoPaths", init={"dim": "C", "variant": True})
    assert result.error is None and not _errors(result)


def test_a_switch_turned_on_that_the_constructor_refuses_is_turned_off():
    result = _check("OptionalBias")
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("use_rel_bias set False" in n for n in result.notes), result.notes


def test_a_config_class_that_refuses_the_sizes_is_a_target_error_naming_its_line():
    result = _check("UsesEight")
    assert result.error and "raised AssertionError: heads in groups of eight" in result.error
    assert "internal error" not in result.error and "--init config." in result.error


def test_an_image_too_small_for_the_module_is_read_larger():
    result = _sizes("FixedGridClassifier", init={"in_channels": 3, "hidden": 8})
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("read at 64x64" in n for n in result.notes), result.notes


def test_a_mask_per_sample_is_read_after_the_ids_beside_it():
    result = _sizes("PaddedConvText")
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("read as token ids" in n for n in result.notes), result.notes
    assert any("m given as m=B,T" in n for n in result.notes), result.notes


def test_a_length_left_at_its_default_none_that_forward_compares_is_passed():
    result = _sizes("CachedTable")
    assert result.error is None, result.error
    assert not _errors(result)


def test_a_forward_that_fails_on_an_argument_left_at_none_is_a_target_error():
    result = _sizes("CutByCaller")
    assert not result.diagnostics
    assert result.error and "max_len left None" in result.error


def test_a_forward_that_fails_on_a_none_shapetrace_passed_is_a_target_error():
    """``lens`` tested with ``is None`` in one place is passed as None; read unguarded in another,
    the run fails there: the value shapetrace left out, never an op-failed finding."""
    result = _check("LengthsCutPerSample")
    assert not result.diagnostics, result.diagnostics
    assert result.error and "forward failed on None" in result.error and "lens" in result.error, \
        result.error


def test_a_guess_a_convolution_refuses_for_its_channels_after_a_slice_is_a_target_error():
    result = _check("ChannelsCutPerSample")
    assert not result.diagnostics, result.diagnostics
    assert result.error and "--input" in result.error, result.error


def test_a_side_name_handed_to_a_layer_the_module_holds_is_a_tensor():
    """``forward(self, h, w)`` with ``self.to_gain_bias(w)``: a style vector, not a width."""
    result = _sizes("StyleModulatedNorm")
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics
    handed = next(r for r in result.to_json()["trace"] if r["op"] == "F.linear")
    assert handed["inputs"][0].startswith("(B,"), handed


def test_an_input_unpacked_into_two_sizes_by_a_module_that_embeds_is_token_ids():
    result = _sizes("CaptionScorer")
    assert result.error is None, result.error
    assert any(n.startswith("captions read as token ids") for n in result.notes), result.notes
