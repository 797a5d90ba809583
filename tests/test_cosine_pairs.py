"""silent-broadcast and an all-pairs table that is meant: the norms' outer product |q| |k|^T
that divides the scores q . k of scaled cosine attention is no finding; the same table read
by the softmax on its own is still warned about."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "cosine"


@pytest.fixture(scope="module")
def targets() -> dict:
    out = subprocess.run([sys.executable, "-m", "shapetrace", str(DATA / "attention.py"), "--format",
                          "json", "--no-trace"], capture_output=True, text=True, timeout=600)
    return {t["target"].split("::")[-1]: t for t in json.loads(out.stdout)["targets"]}


def test_the_norms_table_dividing_the_scores_is_meant(targets):
    entry = targets["CosineAttention"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry


def test_the_norms_table_read_alone_is_still_warned_about(targets):
    found = [d for d in targets["NormsOnly"]["diagnostics"] if d["rule"] == "silent-broadcast"]
    assert found and found[0]["line"] == 39 and found[0]["severity"] == "warning", found
