"""Guessed inputs follow what the code shows, and what a guess alone makes is never a verdict:
weights kept in bfloat16 are fed bfloat16, a mask shape no reading fits is asked for, and an
output a dropout draws anew each call is no dependency on another sample."""

import functools
from pathlib import Path

import torch

from shapetrace.drive.devices import on_meta
import resolved

DATA = Path(__file__).with_name("data") / "guessed" / "fit.py"


def test_weights_kept_in_bfloat16_are_fed_bfloat16():
    result = resolved.result(f"{DATA}::HalfPrecisionBlock")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


def test_a_mask_shape_no_reading_fits_is_asked_for_not_reported():
    result = resolved.result(f"{DATA}::MemoryMaskPerSample")
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]
    if result.error is not None:  # asked for, naming the mask and the flag
        assert "memory_mask" in result.error and "--input" in result.error


def test_an_output_drawn_anew_each_call_is_no_batch_leak():
    result = resolved.result(f"{DATA}::WeightsReturnedAfterDropout",
                             inputs=["x=B,T,C", "mask=B,T:bool"])
    rules = {d.rule for d in result.diagnostics}
    assert "nondeterministic-eval" in rules
    assert "batch-leak" not in rules, [(d.rule, d.message) for d in result.diagnostics]


@functools.lru_cache(1)
def _table(n):
    return torch.arange(n, dtype=torch.float32)


def test_a_full_cache_refilled_on_meta_is_emptied_on_the_way_out():
    assert not _table(3).is_meta
    with on_meta():
        assert _table(5).is_meta  # replaces the one entry: the cache's size stays 1
    assert not _table(5).is_meta


def test_a_learned_vector_is_one_value_per_channel():
    result = resolved.result(f"{DATA}::ChannelScale")
    assert result.error is None, result.error
    assert result.ok


def test_a_group_count_handed_to_torch_divides_the_channels():
    result = resolved.result(f"{DATA}::GroupNormTimeLast")
    assert result.error is None, result.error
    assert any("num_groups read as" in n for n in result.notes), result.notes


def test_a_value_handed_to_a_torch_argument_takes_its_default():
    result = resolved.result(f"{DATA}::LeakyScores")
    assert result.error is None, result.error
    assert any("slope=0.01" in n for n in result.notes), result.notes


def test_a_module_argument_that_asks_for_a_round_head_size_gets_one():
    result = resolved.result(f"{DATA}::StackOfLayers")
    assert result.error is None, result.error
    assert any(n.startswith("d=16") for n in result.notes), result.notes


def test_a_block_is_fed_the_table_its_encoder_makes_beside_a_guessed_mask():
    result = resolved.result(f"{DATA}::BlockWithPositions")
    assert result.error is None, result.error
    assert any("EncoderWithPositions builds it" in n for n in result.notes), result.notes
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


def test_widths_too_large_at_the_probe_width_are_checked_at_a_smaller_one():
    result = resolved.result(f"{DATA}::WidthsPerLevel")
    assert result.error is None, result.error
    assert any("too many parameters to check" in n for n in result.notes), result.notes


CHOSEN = Path(__file__).with_name("data") / "guessed" / "chosen.py"


def test_a_window_filled_position_by_position_is_read_as_the_size_it_meets():
    """``for i in range(win_size)`` that fills a table is no count of layers; a value chosen
    for it that meets the sequence at an op is read as the sequence's length."""
    result = resolved.result(f"{CHOSEN}::DistancePriorAttention")
    assert result.error is None, result.error
    assert not resolved.errors(result), [(d.rule, d.message) for d in result.diagnostics]
    assert any(n.startswith("win_size=") and "the size of T it met" in n for n in result.notes)


def test_a_count_of_layers_built_in_a_loop_stays_a_count():
    from shapetrace.drive.usage import LAYER_COUNT, meaning_by_use
    target = resolved.target(f"{CHOSEN}::StackedBlocks")
    assert meaning_by_use(target.cls, "depth") == LAYER_COUNT
    table = resolved.target(f"{CHOSEN}::DistancePriorAttention")
    assert meaning_by_use(table.cls, "win_size") is None


def test_a_module_moved_to_the_gpu_is_checked_on_the_cpu_behaviour_included():
    result = resolved.result(f"{CHOSEN}::PriorOnDevice")
    assert result.error is None, result.error
    assert not [n for n in result.notes if "raised while re-running" in n], result.notes
    assert not [s for s in result.skips if "batch-leak" in s.checks], result.skips


def test_an_optional_mask_the_guess_does_not_fit_is_left_none():
    result = resolved.result(f"{CHOSEN}::ChunkedMaskedAttention")
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]
    assert any(n.startswith("mask left None") for n in result.notes)


def test_a_chosen_value_that_meets_no_probe_size_is_asked_for_not_reported():
    result = resolved.result(f"{CHOSEN}::PriorOverPaddedScores")
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]
    assert result.error is not None and "win_size=" in result.error \
        and "a value shapetrace chose" in result.error, result.error


def test_a_chosen_value_of_a_module_built_for_an_argument_is_no_verdict():
    """Checked at the length of the table it builds, or asked for naming the value chosen for
    the module built for its argument: never an op-failed finding."""
    result = resolved.result(f"{CHOSEN}::PriorLayer")
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]
    if result.error is not None:
        assert "prior.win_size=" in result.error, result.error
    else:
        assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


def test_a_value_chosen_inside_a_built_argument_is_named_when_it_does_not_fit():
    result = resolved.result(f"{CHOSEN}::PriorLayer", dims={"T": 7})
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]
    assert result.error is not None and "prior.win_size=4" in result.error, result.error


RECEIVERS = Path(__file__).with_name("data") / "guessed" / "receivers.py"


def test_an_input_handed_on_as_queries_keys_and_values_is_one_sequence():
    result = resolved.result(f"{RECEIVERS}::DecoderLayer")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


def test_an_input_copied_before_the_layers_and_a_mask_used_four_calls_down_are_read():
    result = resolved.result(f"{RECEIVERS}::Decoder")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert not any(n.startswith("vocab_len read as the model width") for n in result.notes)


def test_a_width_named_dim_model_and_a_vocabulary_named_vocab_len_are_read_by_name():
    from shapetrace.base.names import size_of

    assert size_of("dim_model") == "C" and size_of("vocab_len") == "V"


def test_a_causal_flag_nothing_sets_is_off_and_said():
    result = resolved.result(f"{RECEIVERS}::RelativeTable")
    assert result.error is None, result.error
    assert any(n.startswith("causal=False") for n in result.notes), result.notes


def test_sizes_an_unpacking_names_beside_the_batch_and_the_width_get_axes_of_their_own():
    result = resolved.result(f"{RECEIVERS}::RowAttention")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any(n.startswith("x read as (num_rows, num_cols, B, C)") for n in result.notes), result.notes


def test_widths_read_from_the_names_a_model_in_another_folder_passes(monkeypatch):
    """``SpectralMixer(in_channels=configs.d_model, ...)`` in models/, no package anywhere: the
    widths are the model's width; the block's complex float32 weights are checked too."""
    project = Path(__file__).with_name("data") / "namespace_project"
    monkeypatch.syspath_prepend(str(project))
    result = resolved.result(f"{project / 'layers' / 'spectral.py'}::SpectralMixer")
    assert result.error is None, result.error
    assert any(n.startswith("in_channels read as the model width") and "model.py" in n
               for n in result.notes), result.notes
    assert not [s for s in result.skips if s.internal], result.skips
    assert not [n for n in result.notes if "raised while re-running" in n], result.notes


def test_a_config_under_a_mangled_name_with_fields_in_capitals_is_read():
    result = resolved.result(f"{RECEIVERS}::ConfiguredFFN")
    assert result.error is None, result.error
    assert any(n.startswith("_ConfiguredFFN__C made with the fields the code reads")
               and "HIDDEN_SIZE=" in n for n in result.notes), result.notes


def test_a_stride_used_only_as_a_slice_step_is_two():
    from shapetrace.drive.usage import slice_step

    result = resolved.result(f"{RECEIVERS}::StridedQueries")
    assert result.error is None, result.error
    assert any(n.startswith("stride=2, a slice's step") for n in result.notes), result.notes
    assert not slice_step(resolved.target(f"{RECEIVERS}::StrideHandedOn").cls, "stride")


def test_a_head_count_kept_at_its_default_is_the_probe_head_count():
    """``head: int = 8`` that no name says counts heads, handed on to the attention: the width
    shapetrace chose does not split into 8, which is its choice, not a bug; built with H = 8,
    the block runs clean and its axes are named."""
    result = resolved.result(f"{DATA}::EncoderHandingOnItsHeads")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert result.dims["H"] == 8 and result.dims["C"] == 8 * result.dims["d"]


RECSYS = Path(__file__).with_name("data") / "guessed" / "recsys.py"


def test_a_recommender_is_built_and_fed_the_way_its_code_reads():
    """Built on the CPU over its default device="cuda:0"; item ids into the table of n_items;
    the padding mask as torch's encoder layer takes it, (B, T); the triangle the constructor
    keeps says it is causal."""
    result = resolved.result(f"{RECSYS}::NextItemEncoder")
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.rule in ("causal-leak", "op-failed")], \
        [(d.rule, d.message) for d in result.diagnostics]
    assert not any("causal-leak not checked" in n for n in result.notes), result.notes


def test_a_kept_causal_mask_built_the_other_way_round_leaks():
    result = resolved.result(f"{RECSYS}::NextItemEncoderPastMasked")
    assert result.error is None, result.error
    assert [d for d in result.diagnostics if d.rule == "causal-leak"], \
        [(d.rule, d.message) for d in result.diagnostics]


def test_a_convolution_as_tall_as_the_maximum_length_runs_at_that_length():
    """A kernel of (max_len, 1) over the stacked sequence: the sequence is made that long,
    not reported as an op that failed on the length shapetrace chose."""
    result = resolved.result(f"{RECSYS}::VerticalConvolution")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("kernel" in n for n in result.notes), result.notes


def test_a_number_standing_in_for_inputs_left_out_is_asked_for_not_reported():
    """Edges and adjacency both left None stand in as 0, which a layer cannot take: the
    inputs the caller passes, asked for, not an op-failed finding."""
    result = resolved.result(f"{DATA}::EdgesOrAdjacency")
    assert not [d for d in result.diagnostics if d.rule == "op-failed"], \
        [(d.rule, d.message) for d in result.diagnostics]
    assert result.error is not None and "left None" in result.error and "edges" in result.error


def test_edge_features_are_read_one_per_pair_of_nodes():
    """``edges`` read first as a sequence like ``nodes``: the forward fails there, on the
    guess; read as one vector per pair of nodes, (B, T, T, C), it runs, and is clean."""
    result = resolved.result(f"{DATA}::EdgeFeatureAttention")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("pair of positions" in n for n in result.notes), result.notes


def test_a_head_count_written_in_makes_the_width_divide_by_it():
    """``nn.MultiheadAttention(d_model, 2)`` refuses an odd width in words with no number
    ("embed_dim must be divisible by num_heads"): the count is read where the check raised,
    and the module is built at a width that divides by it."""
    result = resolved.result(f"{DATA}::TwoHeadSmoother")
    assert result.error is None, result.error
    assert result.ok and result.dims["C"] % 2 == 0, [(d.rule, d.message) for d in result.diagnostics]


def test_a_layer_written_for_another_torch_is_a_target_error():
    """torch's encoder calls the user's layer with a keyword its forward lacks: the code is for
    another torch, said as such, not an op-failed finding."""
    result = resolved.result(f"{DATA}::StackOfOldStyleLayers")
    assert not result.diagnostics, [(d.rule, d.message) for d in result.diagnostics]
    assert result.error is not None and "another version of torch" in result.error


def test_an_input_set_beside_another_takes_its_shape():
    """``res`` joined to ``x`` along the features and subtracted from it: read as ``x`` is."""
    result = resolved.result(f"{DATA}::GatedSkip")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


def test_an_activation_named_in_torch_and_an_optional_number_are_read_from_their_use():
    result = resolved.result(f"{DATA}::NamedActivationMlp")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("activation='ReLU'" in n for n in result.notes), result.notes



def test_a_temperature_the_caller_chooses_is_asked_for():
    """A number forward divides the scores by is the caller's scale: shapetrace would judge its
    own choice of it, so it asks for it instead (a target error naming the argument)."""
    result = resolved.result(f"{DATA}::TemperedAttention")
    assert not result.diagnostics, [(d.rule, d.message) for d in result.diagnostics]
    assert result.error is not None and "temperature" in result.error


def test_a_vocabulary_given_as_a_dict_is_made_with_the_keys_read():
    result = resolved.result(f"{DATA}::CaptionDecoder")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("'<PAD>'" in n for n in result.notes), result.notes


def test_an_argument_kept_and_never_read_is_none():
    result = resolved.result(f"{DATA}::KeepsACountItNeverReads")
    assert result.error is None, result.error
    assert any(n.startswith("n_users=None") for n in result.notes), result.notes


def test_a_width_asked_to_be_a_multiple_of_two_is_made_even():
    result = resolved.result(f"{DATA}::PairedFeaturesTable")
    assert result.error is None, result.error
    assert result.dims["C"] % 2 == 0


def test_a_size_after_the_head_count_in_a_shape_is_the_head_size():
    """``torch.randn(dim, n_head, 3 * c)``: ``c`` sizes each head's features."""
    result = resolved.result(f"{DATA}::HandRolledHeads")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any(n.startswith("c read as the head size (d)") for n in result.notes), result.notes
    assert not any(n.startswith("gated read as") for n in result.notes), result.notes  # a switch


def test_a_triangle_kept_as_an_attribute_says_the_module_is_causal():
    quiet = resolved.result(f"{RECSYS}::SevenStepCausal")
    assert quiet.error is None and quiet.ok, (quiet.error, [(d.rule, d.message) for d in quiet.diagnostics])
    assert not any("causal-leak not checked" in n for n in quiet.notes), quiet.notes
    leaky = resolved.result(f"{RECSYS}::SevenStepPastBlocked")
    assert [d for d in leaky.diagnostics if d.rule == "causal-leak"], \
        [(d.rule, d.message) for d in leaky.diagnostics]


def test_a_table_every_sample_shares_is_read_so_when_a_sequence_does_not_fit():
    """``rel_table`` read first as a sequence like ``x``: folded into positions per head it
    makes as many positions as samples times tokens, and the forward fails there, on the
    guess; read as one table every sample shares, (1, T, C), it runs, and is clean. The
    batch folded into the positions (B*T) is never read as a length of the module's own."""
    result = resolved.result(f"{DATA}::SharedPositionTable")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("every sample shares" in n for n in result.notes), result.notes
    assert not any("table the module builds" in n for n in result.notes), result.notes


def test_a_scalar_per_step_read_from_its_layer_is_one_per_position_when_the_sequence_is():
    """``reward_to_go`` read from ``nn.Linear(1, C)`` as one value per sample, (B, 1): the
    forward adds it to the steps' features and fails there, on the reading; read as one value
    per position, (B, T, 1), as the steps beside it are, it runs, and is clean. The mask's
    length, taken under a name of its own, is read as the maximum length by its square."""
    result = resolved.result(f"{DATA}::RewardConditioned")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any("one vector per position" in n for n in result.notes), result.notes
    assert any(n.startswith("horizon read as the maximum length") for n in result.notes), result.notes


def test_a_count_that_shapes_a_learned_table_of_rows_is_the_maximum_length():
    result = resolved.result(f"{DATA}::LearnedRowsAdded")
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    assert any(n.startswith("n_rows read as the maximum length") for n in result.notes), result.notes


def test_an_input_its_forward_iterates_as_a_container_is_asked_for_not_reported():
    """A tensor guessed for a dict of tensors: ``Features(inputs)`` walks its rows and Python
    refuses them (a ValueError of the dict, no op of torch's): a target error asking for the
    input, never an op-failed finding."""
    result = resolved.result(f"{DATA}::TakesAFeatureDict")
    assert not result.diagnostics, [(d.rule, d.message) for d in result.diagnostics]
    assert result.error is not None and "is iterated by the forward" in result.error, result.error


def test_a_width_that_sizes_a_projection_matrix_stays_a_width():
    from shapetrace.drive.usage import meaning_by_use
    from style_corpus import load

    module = load(DATA, "guessed_fit_projection")
    assert meaning_by_use(module.ProjectedPooler, "width") == "C"
    assert meaning_by_use(module.LearnedRowsAdded, "n_rows") == "L"
