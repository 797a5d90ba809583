"""Sizes a constructor's defaults fix (tests/data/fixed_defaults/speech.py): a default argument
that is a module built at the default width makes shapetrace build the class at its default
sizes and run it (not an op-failed finding at its choice of width); a layer of torch's that
refuses the guessed input's width before any op ran is a target error naming the input."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILE = Path(__file__).parent / "data" / "fixed_defaults" / "speech.py"


def _target(capsys, cls):
    code, report = cli_json(capsys, f"{FILE}::{cls}")
    (target,) = report["targets"]
    return code, target


def test_a_default_module_built_at_the_default_width_is_run_at_that_width(capsys):
    code, target = _target(capsys, "PlacedAttention")
    assert target["error"] is None and code == 0, target["error"]
    assert not [d for d in target["diagnostics"] if d["severity"] in ("error", "warning")]
    notes = " ".join(target["notes"])
    assert "d_model=144, num_heads=4, the defaults" in notes
    assert "positional_encoder=PositionTable(...) is built at those sizes" in notes


def test_a_layer_refusing_the_guessed_width_is_a_target_error(capsys):
    code, target = _target(capsys, "RecurrentHead")
    assert not [d for d in target["diagnostics"] if d["rule"] == "op-failed"], target["diagnostics"]
    assert target["error"] is not None
    assert "input 'x', guessed from its name" in target["error"]
    assert "does not fit the layer it is handed to" in target["error"]
    assert "Expected 144" in target["error"]


def test_a_guessed_tensor_a_function_takes_as_a_number_is_a_target_error(capsys):
    code, target = _target(capsys, "GridAngles")
    assert not [d for d in target["diagnostics"] if d["rule"] == "op-failed"], target["diagnostics"]
    assert target["error"] is not None
    assert "input 'h', guessed from its name" in target["error"]
    assert "to a function that takes a number there" in target["error"]
