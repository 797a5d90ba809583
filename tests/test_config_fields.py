"""Config objects nothing annotates, made from the fields the code reads: a field named for the
part of the model it sizes (``txt_n_heads``, ``img_patch_size``) is read as the size after that
part, a norm's epsilon and a rotary base as the numbers they always are; a forward that fails
on a field nothing names is a target error naming it, never a finding
(tests/data/configs/prefixed.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import resolved
from shapetrace.base.names import field_size, number_of, size_of, unprefixed

DATA = Path(__file__).parent / "data" / "configs"
_check = partial(resolved.result, DATA / "prefixed.py")


@pytest.mark.parametrize("name, dim", [("txt_n_heads", "H"), ("vit_embed_dim", "C"),
                                       ("enc_max_seq_len", "L"), ("txt_width", None),
                                       ("hidden_dim", None), ("max_dim", None),
                                       ("token_emb", None), ("use_abs_pos_emb", None)])
def test_a_size_named_for_a_part_of_the_model_is_read_after_it(name, dim):
    assert field_size(name) == dim
    assert size_of(name, constructor=True) in (dim, None)  # a constructor's own name: as it is


def test_words_that_change_what_a_size_is_are_never_taken_for_a_part():
    assert unprefixed("lm_hidden_dim") == "hidden_dim"
    assert unprefixed("max_len") is None and unprefixed("num_heads") is None
    assert number_of("lm_rms_eps") == 1e-5 and number_of("rope_theta") == 10000.0
    assert number_of("img_patch_size") is None and number_of("img_patch_size", field=True) == 2


@pytest.mark.parametrize("cls", ["ScaledNorm", "GroupedTextAttention", "PatchEncoder"])
def test_a_config_of_prefixed_fields_is_made_and_the_module_checked(cls):
    result = _check(cls)
    assert result.error is None, result.error
    assert not resolved.errors(result), result.diagnostics


def test_a_field_nothing_names_that_forward_fails_on_is_a_target_error():
    result = _check("TemperedScores")
    assert not result.diagnostics, result.diagnostics
    assert result.error and "cfg.txt_softness" in result.error and "--init cfg.txt_softness=" \
        in result.error, result.error


_spread = partial(resolved.result, DATA / "spread.py")


def test_a_dict_spread_into_a_module_class_is_that_class_s_arguments():
    result = _spread("SpreadConfigModel")
    assert "cannot infer constructor argument 'decoder_config'" not in (result.error or ""), result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert result.error is None, result.error




_channels = partial(resolved.result, DATA / "channels.py")


def test_a_per_channel_scale_says_the_data_comes_channels_first():
    """(1, C, 1) scale and shift meeting a (B, T, C) guess: the input is read (B, C, T)."""
    result = _channels("ChannelNorm", init={"channels": "C"})
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
    assert any("x read as (B, C, T), channels first, as a scale or shift of its own per channel"
               in n for n in result.notes), result.notes


def test_a_config_class_taking_its_annotated_fields_as_keywords_is_built_at_the_probe_sizes():
    """``@dataclass class BlockArgs`` with ``dim: int = 4096`` and its own ``__init__(self,
    **kwargs)``: built with its fields at the probe sizes, not at 4096 the guessed input misses."""
    result = _spread("ArgsAttention")
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)


def test_a_style_vector_per_sample_and_channels_first_data_are_read_together():
    """``s`` read as a vector per sample gets past its projection; the instance norm's own
    check then refuses ``x`` as (B, T, C): read channels first, the two readings together."""
    result = _channels("StyleNorm")
    assert result.error is None and not result.diagnostics, (result.error, result.diagnostics)
    notes = " ".join(result.notes)
    assert "s read as a vector per sample, (B, C)" in notes and "x read as (B, " in notes, notes


_parts = partial(resolved.result, DATA / "parts.py")


@pytest.mark.parametrize("cls", ["EncoderAttention", "Encoder"])
def test_a_config_whose_part_the_code_names_is_made_with_that_part(cls):
    result = _parts(cls)
    assert result.error is None, result.error
    assert result.diagnostics == [], result.diagnostics


def test_a_module_built_from_a_named_part_of_its_config_is_judged():
    assert resolved.errors(_parts("EncoderAttentionScaledByWidth")) == [("attention-scale", 30)]


def test_a_config_dataclass_by_any_name_is_the_one_holding_every_field_read():
    """``ModelArgs`` holds what the attention reads (one field set in the class body), the
    other dataclass does not: it is built, its sizes at the probe's."""
    result = resolved.result(DATA / "by_fields.py", "ScaledAttention")
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert {result.dims["C"], result.dims["H"], result.dims["d"]} == {143, 11, 13}
