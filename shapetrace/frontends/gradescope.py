"""Gradescope's ``results.json`` from the pytest plugin's results (SPEC section 7).

Gradescope runs ``/autograder/run_autograder`` and reads ``/autograder/results/results.json``:

```json
{"score": 3.0,
 "output": "shapetrace: 3 of 4 checks passed (3.0 of 4.0 points)",
 "tests": [{"name": "shapetrace::student/attention.py::MultiHeadAttention",
            "score": 0.0, "max_score": 2.0, "status": "failed",
            "output": "error reshape-jumble [ST001] student/attention.py:30 ..."}]}
```

One test per target and per traced test, in the order pytest ran them (targets first);
``max_score`` is the target's ``points`` (default 1), ``score`` is all or nothing, ``output`` the
findings as plain text in a Markdown code block (``output_format: "md"``: Gradescope renders it
in a fixed-width font, so shapes and columns line up; no trace: Gradescope shows it to the
student, the trace is in the ``--shapetrace-report`` file), ``visibility`` the target's (or the
config's) when one is set: ``visible``, ``hidden``, ``after_due_date``, ``after_published``.
Plain data in, plain data out: the plugin makes one :func:`gradescope_test` where each item ran
(an xdist worker) and the controller writes the file, in every case: a test that could not be
graded (a crash, an interrupted session) is there too, failed, saying why (:func:`not_graded`).
"""

from __future__ import annotations

import json
from pathlib import Path

MAX_OUTPUT = 20_000  # characters of findings shown per test; Gradescope pages get slow beyond


def gradescope_test(name: str, *, passed: bool, points: float = 1, output: str = "",
                    visibility: str | None = None) -> dict:
    """One entry of ``tests``: all of ``points`` when it passed, none otherwise."""
    points = float(points)
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT] + f"\n... ({len(output) - MAX_OUTPUT} more characters)"
    test = {"name": name, "score": points if passed else 0.0, "max_score": points,
            "status": "passed" if passed else "failed", "output": _code_block(output),
            "output_format": "md"}
    if visibility is not None:
        test["visibility"] = visibility
    return test


def not_graded(name: str, why: str, *, points: float = 1,
               visibility: str | None = None) -> dict:
    """A test that was to be graded but left no result (its worker crashed, the session was
    interrupted): failed, with the reason."""
    return gradescope_test(name, passed=False, points=points, output=f"not graded: {why}",
                           visibility=visibility)


def mark_failed(test: dict, why: str) -> dict:
    """The same test, failed afterwards (its teardown failed): no points."""
    text = _text_of(test["output"])
    return {**test, "score": 0.0, "status": "failed",
            "output": _code_block(f"{text}\n{why}".strip())}


_FENCE = "```"


def _code_block(text: str) -> str:
    """``text`` as a Markdown code block, fenced with more backticks than it holds in a row."""
    if not text:
        return ""
    fence = _FENCE
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def _text_of(block: str) -> str:
    """The text inside a :func:`_code_block`."""
    lines = block.split("\n")
    if len(lines) >= 2 and lines[0].startswith(_FENCE) and lines[-1] == lines[0]:
        return "\n".join(lines[1:-1])
    return block


def results_document(tests: list[dict]) -> dict:
    """The whole ``results.json``: every test, the total score and a one-line summary."""
    score = sum(t["score"] for t in tests)
    max_score = sum(t["max_score"] for t in tests)
    passed = sum(t["status"] == "passed" for t in tests)
    summary = (f"shapetrace: {passed} of {len(tests)} checks passed "
               f"({_points(score)} of {_points(max_score)} points)"
               if tests else "shapetrace: nothing was checked")
    return {"score": score, "output": summary, "tests": list(tests)}


def write_results(path: Path, tests: list[dict]) -> None:
    """Write ``results.json`` (strict JSON); OSError when it cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results_document(tests), indent=2, allow_nan=False) + "\n",
                    encoding="utf-8")


def _points(value: float) -> str:
    return f"{value:g}"
