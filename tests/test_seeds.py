"""The lecture notes (``/work/shared/seeds``), copied as a student would, under
``python -m shapetrace``: the correct code clean with a readable trace, seed 004's two bugs caught
at their lines, the broadcasting pitfalls of seed 003's cheatsheet flagged, and no name the code
did not state.

Seed 001's scripts (the bag-of-words averages, the single head written out) are
``tests/data/scripts/bag_of_words.py`` and ``qkv_walkthrough.py``, run in ``test_script.py``; its
GPT with module-level sizes is ``tests/data/names/gpt_module_config.py`` (``test_module_config``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shapetrace.frontends.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEEDS = "tests/data/seeds"


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "120")


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def run_json(capsys, *argv: str) -> tuple[int, list[dict]]:
    code, out = run(capsys, *argv, "--format", "json")
    return code, json.loads(out)["targets"]


def _bug_lines(path: str) -> dict[int, str]:
    lines = (ROOT / path).read_text().splitlines()
    return {i: m.group(1) for i, line in enumerate(lines, 1)
            if (m := re.search(r"# BUG: ([a-z-]+)", line))}


def test_seed000_numpy_walkthrough_says_nothing_was_checked(capsys):
    """numpy only: nothing shapetrace traces ran, and the verdict says so (exit 2)."""
    code, out = run(capsys, f"{SEEDS}/seed000_numpy_walkthrough.py")
    assert code == 2 and "nothing to check: the script ran no torch tensor op" in out
    assert "no problems found" not in out


def test_seed002_scaled_dot_product_is_clean_and_named_from_dims(capsys):
    path = f"{SEEDS}/seed002_scaled_dot_product.py"
    code, out = run(capsys, path)
    assert code == 0 and "✓ no problems found" in out
    assert "F.softmax           (4, 4) → (4, 4)" in out  # no --dims: numbers
    code, out = run(capsys, path, "--dims", "T=4,C=16,d=64")
    assert code == 0
    assert "F.softmax           (T, T) → (T, T)" in out
    assert "torch.matmul        (T, C) → (T, d)" in out
    assert "torch.matmul        (T, d), (d, T) → (T, T)" in out


def test_seed003_broadcasting_pitfalls_are_flagged_at_their_lines(capsys):
    path = f"{SEEDS}/seed003_cheatsheet.py"
    code, (target,) = run_json(capsys, path)
    assert code == 1
    found = {d["line"]: d["rule"] for d in target["diagnostics"]}
    assert found == _bug_lines(path)  # the (7, 1, 4, 5) batch broadcast and .T on 4 axes
    shapes = [s for r in target["trace"] for s in (*r["inputs"], *r["outputs"])]
    assert not [s for s in shapes if re.search(r"[A-Za-z]", s)], shapes  # 7 is not T, 5 not B
    texts = " ".join(d["message"] for d in target["diagnostics"])
    assert "(7, 2, 3, 4)" in texts and "(4, 3, 2, 7)" in texts


def test_seed004_two_bugs_are_caught_at_their_lines(capsys):
    path = f"{SEEDS}/seed004_attention.py"
    code, targets = run_json(capsys, path)
    assert code == 1
    by_class = {t["target"].split("::")[1]: t for t in targets}
    bugs = _bug_lines(path)
    self_attention = {(d["rule"], d["line"]) for d in by_class["SelfAttention"]["diagnostics"]}
    assert ("reversed-transpose", 19) in self_attention and bugs[19] == "reversed-transpose"
    for name in ("CausalAttention", "MultiHeadAttentionWrapper"):
        found = {(d["rule"], d["line"]) for d in by_class[name]["diagnostics"]}
        line = next(n for n, rule in bugs.items() if rule == "discarded-result")
        assert ("discarded-result", line) in found, found
    wrapper = [d for d in by_class["MultiHeadAttentionWrapper"]["diagnostics"]
               if d["rule"] == "discarded-result"]
    assert len(wrapper) == 1  # one bug in eleven heads, one finding
    correct = by_class["MultiHeadAttention"]
    assert correct["ok"] and correct["diagnostics"] == []


def test_seed004_correct_class_has_a_named_trace(capsys):
    code, out = run(capsys, f"{SEEDS}/seed004_attention.py::MultiHeadAttention")
    assert code == 0 and "✓ no problems found" in out
    assert "(B, T, C) → (B, T, H, d)" in out and "(B, H, T, T)" in out
