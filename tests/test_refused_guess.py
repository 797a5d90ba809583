"""A module whose own check (a ``raise`` or an ``assert`` in its code) refuses the inputs
shapetrace guessed from their names: the guess did not fit, never a finding. When the check asks
for a square number of tokens, a square sequence length is tried and stands when it runs."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from shapetrace.frontends.cli import main

DATA = Path(__file__).parent / "data" / "refused" / "own_checks.py"


def _report(target: str, *argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([target, "--format", "json", "--no-trace", "--no-own-calls", *argv])
    (found,) = json.loads(out.getvalue())["targets"]
    return found


def test_a_check_that_asks_for_a_square_number_of_tokens_gets_one():
    target = _report(f"{DATA}::GridPool")
    assert target["error"] is None and target["ok"], target["diagnostics"]
    assert target["dims"]["T"] == 16
    assert any(n.startswith("T=16, a square number of tokens, as the code asks") for n in target["notes"])


def test_a_check_that_refuses_the_guess_is_a_target_error_not_a_finding():
    target = _report(f"{DATA}::RefusesOddWidth")
    assert target["diagnostics"] == []
    assert "RefusesOddWidth's own check refused the inputs guessed from their names, x (5, 7, 143)" \
        in target["error"]
    assert "ValueError: at most 4 tokens, please" in target["error"] and "--input" in target["error"]


def test_declared_inputs_that_the_check_refuses_are_the_modules_finding():
    target = _report(f"{DATA}::RefusesOddWidth", "--input", "x=B,T,C")
    assert target["error"] is None
    assert [d["rule"] for d in target["diagnostics"] if d["severity"] == "error"] == ["op-failed"]


COMPUTED = Path(__file__).parent / "data" / "refused" / "computed_sizes.py"


def test_a_size_below_zero_made_from_a_chosen_size_is_a_target_error():
    """seq_len chosen as T = 7 and the code's own grid of 8 x 8 leave -57 text tokens: the
    value shapetrace chose does not fit the code's own, which says nothing of the code."""
    target = _report(f"{COMPUTED}::PrefixThenGrid")
    assert target["diagnostics"] == []
    assert "PrefixThenGrid built with seq_len=" in target["error"]
    assert "a value shapetrace chose" in target["error"] and "--init" in target["error"]
    assert "computed_sizes.py:16" in target["error"]
    fits = _report(f"{COMPUTED}::PrefixThenGrid", "--init", "dim=C,seq_len=70")
    assert fits["error"] is None  # at sizes that fit together it is checked


def test_a_size_below_zero_made_from_the_inputs_alone_stays_a_finding():
    target = _report(f"{COMPUTED}::WindowTooWide")
    assert target["error"] is None
    assert [d["rule"] for d in target["diagnostics"] if d["severity"] == "error"] == ["op-failed"]


def test_a_check_written_over_several_lines_is_the_module_s_own():
    """Python places a failed ``assert (\\n cond\\n), msg`` at the condition's line: it is still
    the module's own check refusing the guess, a target error, never op-failed."""
    target = _report(f"{DATA}::PooledProjection")
    assert target["diagnostics"] == [], target["diagnostics"]
    assert "PooledProjection's own check refused the inputs guessed" in target["error"], target["error"]
