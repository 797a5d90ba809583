"""Rotary tables a forward takes from its caller are made as rotary code makes them, so the
module is checked with nothing declared; a timestep beside the dtype to embed it in, and a
rotary module's own sizes (``rotary_dim``, ``base``), are read too (tests/data/rotary/handed.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import torch

import resolved
from shapetrace.drive.rotary_reads import rotary_input

DATA = Path(__file__).parent / "data" / "rotary" / "handed.py"
_check = partial(resolved.result, DATA)
DIMS = {"B": 5, "T": 7, "d": 16}


def test_cos_and_sin_are_the_tables_of_each_positions_angles():
    cos = rotary_input("cos", {"x", "cos", "sin"}, DIMS).value
    sin = rotary_input("sin", {"x", "cos", "sin"}, DIMS).value
    assert cos.shape == sin.shape == (1, 7, 16)
    assert torch.allclose(cos ** 2 + sin ** 2, torch.ones(1, 7, 16))
    assert torch.equal(cos[0, 0], torch.ones(16))  # position 0 is not rotated
    assert rotary_input("cos", {"x", "cos"}, DIMS) is None  # a cos alone says nothing
    freqs = rotary_input("freqs_cis", {"x", "freqs_cis"}, DIMS).value
    assert freqs.shape == (7, 8) and freqs.is_complex()


@pytest.mark.parametrize("cls", ["TablesHandedIn", "ComplexRotations", "TablesFromPositions",
                                 "TimeEmbedding"])
def test_a_module_given_its_rotary_tables_is_checked(cls):
    result = _check(cls)
    assert result.error is None, result.error
    assert not resolved.errors(result), result.diagnostics


def test_a_bug_beside_the_tables_is_found_at_its_line():
    result = _check("TablesHandedInJumbled")
    lines = DATA.read_text().splitlines()
    bug = next(n for n, line in enumerate(lines, 1) if line.rstrip().endswith("# BUG"))
    assert ("reshape-jumble", bug) in resolved.errors(result), result.diagnostics


def test_a_rotary_modules_sizes_are_read_from_their_names():
    from shapetrace.drive.infer import infer_init

    init = infer_init(resolved.target(DATA, "PartialRotary").cls, {"B": 5, "T": 7, "H": 11, "d": 13,
                                                                    "C": 143, "V": 19, "L": 23})
    assert init == {"head_size": 13, "rotary_dim": 13, "base": 10000.0}
