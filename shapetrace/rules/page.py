"""The rules reference page (docs/rules.md), generated from the registry's table."""

from __future__ import annotations

from .registry import _ALL


def rules_markdown() -> str:
    """The rules reference page (docs/rules.md), generated from the registry."""
    out = ["# shapetrace rules", "", "Generated from `shapetrace/rules/registry.py` by "
           "`python docs/generate.py`; do not edit by hand.", "",
           "| code | rule | severity | what it catches |", "|---|---|---|---|"]
    for r in _ALL:
        out.append(f"| {r.code} | [`{r.name}`](#{r.name}) | {r.severity} | {r.summary} |")
    for r in _ALL:
        kind = {"trace": "read from the trace",
                "behaviour": "found by running the module again",
                "runtime": "raised while running"}[r.kind]
        extra = "; needs real values (skipped under `--fake`)" if r.needs_values else ""
        out += ["", f"## {r.name}", "",
                f"`{r.code}` · {r.severity} · {kind}{extra}", "", r.explanation, "",
                "Wrong:", "", "```python", r.wrong, "```", "",
                "Right:", "", "```python", r.right, "```"]
    return "\n".join(out) + "\n"

