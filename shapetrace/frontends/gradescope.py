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
findings as plain text (no trace: Gradescope shows it to the student; the trace is in the
``--shapetrace-report`` file). Plain data in, plain data out: the plugin makes one
:func:`gradescope_test` where each item ran (an xdist worker) and the controller writes the file.
"""

from __future__ import annotations

import json
from pathlib import Path

MAX_OUTPUT = 20_000  # characters of findings shown per test; Gradescope pages get slow beyond


def gradescope_test(name: str, *, passed: bool, points: float = 1, output: str = "") -> dict:
    """One entry of ``tests``: all of ``points`` when it passed, none otherwise."""
    points = float(points)
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT] + f"\n... ({len(output) - MAX_OUTPUT} more characters)"
    return {"name": name, "score": points if passed else 0.0, "max_score": points,
            "status": "passed" if passed else "failed", "output": output}


def mark_failed(test: dict, why: str) -> dict:
    """The same test, failed afterwards (its teardown failed): no points."""
    output = f"{test['output']}\n{why}".strip()
    return {**test, "score": 0.0, "status": "failed", "output": output}


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
