"""The padding check cuts only the sequence the mask pads: an encoder memory guessed at the
decoder's length, whose last positions still move the output, is kept whole in the short run
(no mask-ignored from the guess); padding counted by a mean over every position is still
found."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import shapetrace as st

_PATH = Path(__file__).parent / "data" / "padding" / "decoder.py"
_SPEC = importlib.util.spec_from_file_location("padding_decoder", _PATH)
decoder = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(decoder)


def test_a_memory_of_the_same_length_is_not_cut_with_the_decoders_padding():
    result = st.check(decoder.DecoderLayer).targets[0]
    assert result.error is None, result.error
    assert "mask-ignored" not in {d.rule for d in result.diagnostics}, result.diagnostics


def test_padding_counted_by_a_mean_beside_a_memory_is_still_found():
    result = st.check(decoder.PooledDecoder).targets[0]
    found = [d for d in result.diagnostics if d.rule == "mask-ignored"]
    assert found, result.diagnostics
    assert "# BUG" in _PATH.read_text().splitlines()[found[0].line - 1]
