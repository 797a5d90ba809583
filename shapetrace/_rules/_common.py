"""Helpers shared by the rule families."""

from __future__ import annotations

from .._report import Diagnostic
from .registry import RULES


def at(trace, rec, rule: str, message: str, hint: str = "", severity: str | None = None,
       **data) -> Diagnostic:
    """A Diagnostic located at a record: its file, line, module path and op."""
    data.setdefault("index", rec.index)
    return Diagnostic(
        rule=rule,
        severity=severity or RULES[rule].severity,
        message=message,
        hint=hint,
        file=rec.file,
        line=rec.line,
        module=rec.module or None,
        op=rec.op,
        data=data,
    )


def shape(trace, meta) -> str:
    return trace.shape_of(meta)


def names(axes, dims) -> list[str]:
    from .._provenance import axis_label

    return [axis_label(a, dims) for a in axes]


def call(names_: list[str]) -> str:
    return "(" + ", ".join(names_) + ")"
