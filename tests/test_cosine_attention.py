"""attention-scale stays quiet on cosine attention (queries and keys of unit length, by
F.normalize or the code's own L2 norm, rotated or not, by matmul or SDPA) and still fires on
RMS-normalised ones scaled the wrong way."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import shapetrace as st

_PATH = Path(__file__).parent / "data" / "cosine" / "unit_rows.py"
_SPEC = importlib.util.spec_from_file_location("cosine_unit_rows", _PATH)
unit_rows = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(unit_rows)


@pytest.mark.parametrize("name", ["NormalizedSDPA", "OwnNormMatmul"])
def test_cosine_attention_owes_no_inverse_square_root(name):
    result = st.check(getattr(unit_rows, name)).targets[0]
    assert result.error is None, result.error
    assert "attention-scale" not in {d.rule for d in result.diagnostics}, result.diagnostics


def test_rms_normalised_queries_scaled_up_are_still_found():
    result = st.check(unit_rows.RMSNormedScaledUp).targets[0]
    (found,) = [d for d in result.diagnostics if d.rule == "attention-scale"]
    line = _PATH.read_text().splitlines()[found.line - 1]
    assert "# BUG" in line
