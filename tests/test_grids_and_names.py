"""Sizes read from what a module's code says and does: heads named ``query_heads``, a required
stochastic-depth rate, a cache's room for a batch, a width handed to a base class twice (its
own head size too), tokens folded back into a square grid; and a reading that its constructor
refuses never replaces the failure it was tried for (tests/data/grids/modules.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from shapetrace.base.names import DROPOUT, size_of
from shapetrace.drive.usage import meaning_by_use
import resolved

DATA = Path(__file__).parent / "data" / "grids"


_target = partial(resolved.target, DATA / "modules.py")
_check = partial(resolved.result, DATA / "modules.py")
_errors = resolved.errors


def test_query_heads_are_the_heads_and_key_value_heads_divide_them():
    assert size_of("query_heads", constructor=True) == "H"
    result = _check("GroupedHeads")
    assert result.error is None, result.error
    assert not _errors(result)


@pytest.mark.parametrize("name", ["drop_path", "drop_path_rate", "attn_drop", "proj_drop",
                                  "uncond_prob", "drop"])
def test_rates_of_random_training_ops_are_off(name):
    assert DROPOUT.search(name)


@pytest.mark.parametrize("name", ["keep_prob", "drop_last", "backdrop"])
def test_names_that_are_not_such_rates_are_left(name):
    assert not DROPOUT.search(name)


def test_a_required_stochastic_depth_rate_is_given_off():
    result = _check("DepthDropBlock")
    assert result.error is None, result.error
    assert not _errors(result)


def test_a_cache_s_room_for_a_batch_is_the_batch():
    assert size_of("max_batch_size", constructor=True) == "B"
    result = _check("CachedKeys")
    assert result.error is None, result.error
    assert not _errors(result)


def test_a_width_handed_to_the_base_class_as_width_and_head_size_is_the_width():
    assert meaning_by_use(_target("SingleHeadMix").cls, "channels_in") == "C"
    result = _check("SingleHeadMix")
    assert result.error is None, result.error
    assert not _errors(result)


def test_tokens_folded_into_a_square_grid_are_read_at_a_square_length():
    result = _check("TokensToImage")
    assert result.error is None, result.error
    assert result.dims["T"] == 16
    assert any("square number of tokens" in n for n in result.notes), result.notes
    assert not _errors(result)


def test_a_reading_its_constructor_refuses_leaves_the_first_failure_standing():
    result = _check("TableAttention")
    assert result.error is not None
    assert "AssertionError" not in result.error  # the config a reading reset, refused
    assert "Tensor.view" in result.error and "depends on the guess" in result.error


def test_an_argument_forward_never_reads_is_given_none():
    result = _check("IgnoresItsMask")
    assert result.error is None, result.error
    assert not _errors(result)


def test_sizes_annotated_as_numbers_are_sizes_and_an_even_width_its_check_asks_for_is_read():
    result = _check("GridTable")
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("own check asks for an even size" in n for n in result.notes), result.notes


def test_a_mask_its_forward_demands_is_given_and_a_shape_that_pairs_samples_does_not_stand():
    result = _check("DemandsMask")
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("mask=B,T:" in n for n in result.notes), result.notes
    assert not any("mask=B,T,T" in n for n in result.notes), result.notes


def test_a_constructor_argument_tested_for_none_is_given_none():
    result = _check("SharedBias")
    assert result.error is None, result.error
    assert not _errors(result)
    assert any("bias_u=None" in n for n in result.notes), result.notes


def test_heads_and_a_head_size_of_multiples_a_constructor_fixes_are_read_in_turn():
    result = _check("GroupedStack")
    assert result.error is None, result.error
    assert not _errors(result)
    asked = [n for n in result.notes if "multiple of a number of its own" in n]
    assert [n.split(":")[0] for n in asked] == ["H=8", "d=16"], result.notes


def test_a_timestep_alone_beside_a_switch_is_one_timestep_per_sample():
    result = _check("StepEmbedding")
    assert result.error is None, result.error
    assert not _errors(result)


def test_an_attribute_only_a_set_up_method_makes_is_a_target_error_naming_it():
    result = _check("NeedsSetup")
    assert result.error is not None and "NeedsSetup.setup_cache()" in result.error
    assert not _errors(result)


def test_heads_split_off_a_width_and_merged_with_a_batch_of_strips_are_no_jumble():
    # the attention's two heads as many as the strips per image: sizes that coincide
    result = _check("StripAttention", init={"d_model": "C", "nhead": 4, "width": 3},
                    inputs=["src=B,C,Y,X"], dims={"C": 64, "Y": 6, "X": 9})
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.rule == "reshape-jumble"], result.diagnostics


def test_an_output_made_non_finite_by_a_table_the_module_held_is_found_where_it_was_made():
    """The constructor divided by zeros: run again with every op watched, its line is the one
    that made the NaN, an error there naming the table that held it."""
    result = _check("NanTable")
    assert result.error is None, result.error
    (held,) = [d for d in result.diagnostics if d.rule == "non-finite"]
    made = next(i for i, line in enumerate((DATA / "modules.py").read_text().splitlines(), 1)
                if 'self.register_buffer("table", torch.sin(pos' in line)
    assert held.severity == "error" and held.line == made and "`table`" in held.message
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["non-finite"]


def test_a_module_whose_state_is_finite_gets_no_such_warning():
    result = _check("GroupedHeads")
    assert not [d for d in result.diagnostics if d.rule == "non-finite"]


def test_a_wrapper_that_hands_on_kwargs_its_callee_requires_is_a_target_error_not_a_finding():
    result = _check("PreNormWrap")
    assert result.error is not None and "'mask'" in result.error, result.error
    assert not _errors(result)


def test_attention_weights_that_hold_nan_are_not_judged_for_their_scale():
    result = _check("NanScores")
    # no scale read from NaN weights: the one finding is the NaN, where the constructor made it
    assert [d.rule for d in result.diagnostics if d.severity in ("error", "warning")] == ["non-finite"]
