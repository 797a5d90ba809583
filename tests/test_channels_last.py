"""A grid of vectors kept channels last, (B, H, W, C), is read from the code: a block that
unpacks four sizes from its input and applies linear layers at every position gets an image
whose channels come last when no convolution takes it channels first; a helper built only by
such a block is fed what the block's forward passes it; a stage built with one entry of a list
per stage (``factor=factors[0]``) gets that entry. See tests/data/grids_last/windows.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved
from resolved import cli_json

FILE = Path(__file__).parent / "data" / "grids_last" / "windows.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _first_input(result) -> str:
    return result.to_json()["trace"][0]["inputs"][0]


@pytest.mark.parametrize("cls", ["WindowAttention", "GridBlock"])
def test_a_block_over_a_grid_is_fed_its_channels_last_and_stays_clean(cls):
    result = resolved.result(FILE, cls)
    assert result.error is None, result.error
    assert resolved.errors(result) == []
    first = _first_input(result)
    assert first.startswith("(B, ") and first.endswith(", C)") and first.count(",") == 3, first


def test_heads_merged_without_their_move_are_found_once_the_grid_is_read():
    result = resolved.result(FILE, "WindowAttentionUnmerged")
    assert result.error is None, result.error
    assert resolved.errors(result) == [("reshape-jumble", 56)]
    assert any("channels last" in n for n in result.notes), result.notes


def test_a_helper_only_a_grid_block_builds_is_fed_as_that_block_feeds_it():
    result = resolved.result(FILE, "Shift")
    assert result.error is None, result.error
    assert any(n.startswith("checked as WindowAttention builds it") for n in result.notes), result.notes
    assert _first_input(result).endswith(", C)")


def test_an_entry_of_a_list_per_stage_is_read_where_the_model_passes_it():
    result = resolved.result(FILE, "Stage")
    assert result.error is None, result.error
    assert any(n.startswith("factor=2 as windows.py:") for n in result.notes), result.notes
    assert resolved.errors(result) == []


def test_channels_first_images_are_still_read_channels_first():
    result = resolved.result(FILE, "PatchMerge")
    assert result.error is None, result.error
    assert _first_input(result) == "(B, 3, 8, 8)", _first_input(result)


def test_a_grid_whose_unpacked_names_put_the_batch_third_is_not_read_as_an_image(capsys):
    """``num_rows, num_cols, batch_size, embed_dim = x.size()``: read batch-first, the rows
    would be mixed as if they were samples (a false batch-leak); read as the code names them,
    the rows and columns axes of their own, the batch third, it is checked and clean."""
    path = Path(__file__).parent / "data" / "grids_last" / "alignment.py"
    code, report = cli_json(capsys, f"{path}::RowAttention")
    (target,) = report["targets"]
    assert not [d for d in target["diagnostics"] if d["severity"] == "error"], target["diagnostics"]
    assert target["error"] is None, target["error"]
    assert any(n.startswith("x read as (num_rows, num_cols, B, C)") for n in target["notes"])
    assert not any("channels last" in n for n in target.get("notes", []))
