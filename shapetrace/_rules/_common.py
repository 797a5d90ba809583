"""Helpers shared by the rule families."""

from __future__ import annotations

from .._report import Diagnostic
from .registry import diagnostic


def at(trace, rec, rule: str, message: str, hint: str = "", variant: str | None = None,
       **data) -> Diagnostic:
    """A Diagnostic located at a record: its file, line, module path and op."""
    return diagnostic(rule, message, hint, rec=rec, variant=variant, **data)


def records_of(trace, ops) -> list:
    """The records whose op is one of ``ops``, in trace order."""
    by_op = _by_op(trace)
    found = [by_op[op] for op in ops if op in by_op]
    if len(found) == 1:
        return found[0]
    return sorted((rec for recs in found for rec in recs), key=_index)


def ops_in(trace) -> list[str]:
    """Every op name in the trace."""
    return list(_by_op(trace))


def _by_op(trace) -> dict[str, list]:
    """op name -> its records, in trace order. Most rules look at a handful of ops: the index
    is built once per trace and shared by them."""
    by_op = trace.cache.get("by_op")
    if by_op is None:
        by_op = trace.cache["by_op"] = {}
        for rec in trace.records:
            by_op.setdefault(rec.op, []).append(rec)
    return by_op


def _index(rec) -> int:
    return rec.index


def shape(trace, meta) -> str:
    return trace.shape_of(meta)


def names(axes, dims) -> list[str]:
    from .._provenance import axis_label

    return [axis_label(a, dims) for a in axes]


def call(names_: list[str]) -> str:
    return "(" + ", ".join(names_) + ")"
