"""weight-without-effect for the rows of a learned table that an index fixed when the module
was built never selects (a relative-position index flattened with the wrong strides), and the
tables whose unread rows are no bug: rows picked by the input's tokens or cut by its length,
distances clipped to a range the length does not fill, a padding row."""

from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).resolve().parent / "data" / "valueprops" / "table_rows.py"
WINDOW_3D = {"inputs": ["x=B,N,C"], "dims": {"N": 18}}  # the window's 2 * 3 * 3 tokens


def _marked(cls: str, mark: str = "# BUG") -> int:
    lines = DATA.read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith(f"class {cls}("))
    return next(n for n in range(start, len(lines)) if mark in lines[n]) + 1


@pytest.mark.parametrize("cls, options, rows, table, index", [
    ("OffsetsSummed", {}, "only 13 of its 45 rows (0-12)", "bias_table", "bias_index"),
    ("VolumeStrideTooSmall", WINDOW_3D, "only 35 of its 75 rows (0-34)", "table", "rel_index"),
])
def test_rows_no_input_reaches_are_found_where_the_index_was_made(cls, options, rows, table, index):
    """At the constructor's line that made the index; used where the forward reads the table."""
    result = resolved.result(f"{DATA}::{cls}", **options)
    assert result.error is None, result.error
    (found,) = [d for d in result.diagnostics if d.severity == "error"]
    assert found.rule == "weight-without-effect" and found.line == _marked(cls), found
    assert found.used_at is not None and found.used_at[1] == _marked(cls, "# READ"), found.used_at
    assert found.message.startswith(f"`{table}`: {rows} can move the output"), found.message
    assert (f"the index `{index}`, fixed when the module was built (made at "
            f"{found.file}:{found.line})") in found.message
    assert found.data["end"] == "part" and "stride" in found.hint


@pytest.mark.parametrize("cls, options", [
    ("WindowAttention", {}),
    ("VolumeAttention", WINDOW_3D),
    ("WindowWithClassToken", {}),
    ("ClampedDistances", {}),  # the index cut to the input's length
    ("ClampedDistancesWhole", {}),  # clipped distances: rows unread at both ends, as many each
    ("PositionsFromOne", {}),  # the padding row
    ("PositionsSliced", {}),
    ("TokensAndPositions", {}),  # rows picked by the input's tokens
    ("BucketedDistances", {}),  # buckets that grow with the log of the distance
    ("BucketedDistancesWhole", {}),  # ... read whole: a bucket per direction, not an offset
])
def test_tables_whose_rows_are_all_reachable_or_left_by_design_stay_quiet(cls, options):
    result = resolved.result(f"{DATA}::{cls}", **options)
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics


def test_a_sliced_table_of_distances_is_no_causal_mask():
    """A square index of distances kept on the module and cut to (T, T) says nothing about
    causality: the bidirectional module is not held to it."""
    result = resolved.result(f"{DATA}::ClampedDistances")
    assert not [d for d in result.diagnostics if d.rule == "causal-leak"], result.diagnostics


@pytest.mark.parametrize("cls", ["VolumeAttention", "VolumeStrideTooSmall"])
def test_a_volume_window_is_checked_with_nothing_declared(cls):
    """A window of three sides: its tokens (2 * 3 * 3) are the length the table is built for."""
    result = resolved.result(f"{DATA}::{cls}")
    assert result.error is None, result.error
    assert any(n.startswith("T=18, the tokens of the grid or window") for n in result.notes), \
        result.notes
    errors = {(d.rule, d.line) for d in result.diagnostics if d.severity == "error"}
    assert errors == ({("weight-without-effect", _marked(cls))} if "Too" in cls else set())


def test_only_a_small_volume_window_gives_the_length():
    """A window of 2 x 3 x 3 tokens is the length to try; one of 7 x 7 x 7 would make every run
    of a whole 3-D model that holds it too slow to try (its blocks are checked there)."""
    from shapetrace.drive.asked import window_tokens

    assert window_tokens({"window_size": (2, 3, 3)}) == 18
    assert window_tokens({"window_size": (7, 7)}) == 49
    assert window_tokens({"window_size": (7, 7, 7)}) is None
