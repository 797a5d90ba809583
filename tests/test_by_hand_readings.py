"""Readings with nothing declared for code written by hand: token ids looked up by indexing a
table of the module's own (``self.weight[x]``, no ``nn.Embedding``), and key heads counted as
the query heads divided by a ratio (``num_heads // ratio``), which an odd probe head count
cannot split: the count goes back to its default and the width follows it. Neither is a
finding: the failures were on sizes shapetrace chose."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

FILE = Path(__file__).parent / "data" / "by_hand" / "tables.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _cli(capsys, cls):
    code, report = resolved.cli_json(capsys, f"{FILE}::{cls}")
    (target,) = report["targets"]
    return code, target


def test_ids_looked_up_in_a_table_of_its_own_are_read_as_tokens(capsys):
    code, target = _cli(capsys, "TableLookup")
    assert target["error"] is None and code == 0
    first = target["trace"][0]
    assert first["source"] == "self.weight[x]" and first["inputs"][-1] == "(B, T)", first
    assert any("x read as token ids" in n for n in target.get("notes", [])), target.get("notes")


def test_heads_a_ratio_cannot_split_go_back_to_their_default(capsys):
    code, target = _cli(capsys, "RatioGroups")
    assert target["error"] is None and code == 0, target["error"]
    assert target["dims"]["H"] == 16 and target["dims"]["C"] == 16 * target["dims"]["d"]
    assert not [d for d in target["diagnostics"] if d["severity"] == "error"]
    assert any("num_heads at its default 16 (not 11)" in n for n in target.get("notes", []))


def test_channels_first_inputs_are_read_from_a_group_norm(capsys):
    code, target = _cli(capsys, "ResidualWithTime")
    assert target["error"] is None and code == 0, target["error"]
    first = target["trace"][0]
    assert first["source"] == "self.norm(feature)" and len(first["inputs"][0].split(",")) == 4, first


def test_a_length_the_codes_own_assert_asks_for_is_the_probe_length(capsys):
    code, target = _cli(capsys, "OneTokenAtATime")
    assert target["error"] is None and code == 0, target["error"]
    assert target["dims"]["T"] == 1
    assert any("the length the code's own check asks for" in n for n in target.get("notes", []))


def test_three_readings_one_after_the_other(capsys):
    """``hidden_dim`` as the width, then the heads at their default, then an even head size."""
    code, target = _cli(capsys, "WidthRatioRotary")
    assert target["error"] is None and code == 0, target["error"]
    assert target["dims"]["H"] == 16 and target["dims"]["d"] % 2 == 0
    assert not [d for d in target["diagnostics"] if d["severity"] == "error"]
    notes = " ".join(target.get("notes", []))
    assert "hidden_dim read as the width (C)" in notes and "num_heads at its default 16" in notes
