"""An input whose name says nothing is read as token ids where an embedding refuses it as floats
(tests/data/ids_by_use/encoders.py); one that no embedding reads stays vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

FILE = Path(__file__).parent / "data" / "ids_by_use" / "encoders.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _cli(capsys, cls):
    code, report = resolved.cli_json(capsys, f"{FILE}::{cls}")
    (target,) = report["targets"]
    return code, target


def test_ids_an_embedding_refuses_as_floats_are_read_as_token_ids(capsys):
    code, target = _cli(capsys, "PhonemeEncoder")
    assert target["error"] is None and code == 0, target["error"]
    assert not [d for d in target["diagnostics"] if d["severity"] in ("error", "warning")]
    notes = target.get("notes", [])
    assert any("phone_seq read as token ids" in n and "F.embedding" in n for n in notes), notes
    embedded = [r for r in target["trace"] if r["op"] == "F.embedding"]
    assert embedded and embedded[0]["inputs"][0] == "(B, T)", embedded


def test_vectors_no_embedding_reads_stay_vectors(capsys):
    code, target = _cli(capsys, "FrameDecoder")
    assert target["error"] is None and code == 0, target["error"]
    assert not any("token ids" in n for n in target.get("notes", []))
    linear = [r for r in target["trace"] if r["op"] == "F.linear"]
    assert linear and linear[0]["inputs"][0] == "(B, T, C)", linear
