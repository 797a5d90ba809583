"""A config dict a training script writes at its top (arithmetic included) and passes from its
``main()`` sets the fields no name sizes (an image's channel count, a class count); the fields
named as sizes stay at the probe sizes. The script imports a package this machine lacks: it is
read, never run. See tests/data/script_configs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import resolved
from shapetrace.drive.builtby import _NOTHING, _literal

FILE = Path(__file__).parent / "data" / "script_configs" / "model.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("cls", ["Patches", "Classifier"])
def test_fields_no_name_sizes_come_from_the_scripts_config(cls):
    result = resolved.result(FILE, cls)
    assert result.error is None, result.error
    assert resolved.errors(result) == []
    (note,) = [n for n in result.notes if n.startswith("config: ")]
    assert "num_channels=3 as the config train.py:19 passes" in note, note
    assert "--init config.FIELD=VALUE" in note
    assert result.to_json()["trace"][0]["inputs"][0] == "(B, 3, 16, 16)"
    assert result.dims["C"] == 143  # the width stays a probe size, not the script's 48


@pytest.mark.parametrize("text, value", [
    ("4 * 48", 192), ("(2, 2 * 3)", (2, 6)), ("[1, -2]", [1, -2]),
    ('{"a": 2 ** 3, "b": None}', {"a": 8, "b": None}),
])
def test_a_literal_is_worked_out(text, value):
    assert _literal(ast.parse(text, mode="eval").body) == value


@pytest.mark.parametrize("text", ["2 ** 1000", "1 / 0", "width * 2", '{"a": f(1)}', "{1: 2}"])
def test_what_is_not_a_literal_says_nothing(text):
    assert _literal(ast.parse(text, mode="eval").body) is _NOTHING
