"""Only the inputs the first causally masked op depends on are judged for the future: an
encoder-decoder's source, as long as its target, is read whole by design (tests/data/streams)."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).parent / "data" / "streams" / "seq2seq.py"
INPUTS = {"inputs": ["enc_seq=B,T,C", "dec_seq=B,T,C"], "init": {"d_model": "C", "n_heads": "H"}}

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_the_source_of_an_encoder_decoder_is_not_judged_for_the_future():
    checked = resolved.result(DATA, "Seq2Seq", **INPUTS)
    assert checked.error is None, checked.error
    assert not [d for d in checked.diagnostics if d.rule == "causal-leak"], checked.diagnostics
    assert any("judged through dec_seq" in n and "enc_seq never reaches it" in n
               for n in checked.notes), checked.notes


def test_the_target_is_still_judged():
    checked = resolved.result(DATA, "Seq2SeqSeesAhead", **INPUTS)
    leaks = [d for d in checked.diagnostics if d.rule == "causal-leak" and d.severity == "error"]
    assert leaks and "dec_seq" in leaks[0].message, checked.diagnostics
