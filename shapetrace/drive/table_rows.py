"""Rotary tables handed to forward, read with one row per position.

Code that takes ``cos`` and ``sin`` as arguments holds them in one of two layouts: lifted to
``(1, T, d)`` (or ``(B, T, d)``), applied after one more axis for the heads, or one row per
position ``(context_length, d)``, which the code cuts to the length and lifts itself
(``cos[:T, :].unsqueeze(0).unsqueeze(0)``). shapetrace makes the first
(``rotary_reads.rotary_input``). Given to code of the second kind, the table lifts the queries it
is applied to by an axis, and what follows fails or runs on values of the wrong shape: the
guess, not the code. When the forward fails on values made from the tables, or arithmetic with
them gave more axes than the values they were applied to, the tables are made again with one
row per position.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.specs import ValueInput
from ..analysis.graph import made_from
from .guess import Guess


#: the names of the rotary tables shapetrace makes for a forward
TABLES = ("cos", "sin")


@dataclass(frozen=True)
class TableRows(Guess):
    """``names``: the rotary tables shapetrace made, ``(1, T, d)``."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        rec = failed.failed_op
        if rec is not None and rec.error and any(
                made_from(rec.inputs, arg, failed.trace.records)
                for name, arg in failed.guessed if name in self.names):
            return True
        return failed.ran and failed.raised_by(self.names)

    def others(self, plan, failed) -> Iterator:
        inputs = tuple(ValueInput(s.name, s.value[0]) if isinstance(s, ValueInput)
                       and s.name in self.names and getattr(s.value, "ndim", 0) == 3 else s
                       for s in plan.inputs)
        names = ", ".join(self.names)
        note = (f"{names} made with one row per position (T, d): as (1, T, d) tables they "
                f"{'did not fit' if not failed.ran else 'lifted the values they rotate by an axis'}"
                f"; give them from Python, check(..., inputs=...), to choose")
        rest = tuple(g for g in plan.guesses if g is not self)
        yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)

    def settled_by(self, attempt, plan) -> bool:
        return False  # stands only when the forward runs


def table_guesses(inputs) -> list:
    """A :class:`TableRows` for the rotary tables among ``inputs`` (``cos`` and ``sin`` of
    three axes, as shapetrace makes them), or nothing."""
    names = tuple(s.name for s in inputs if isinstance(s, ValueInput) and s.name in TABLES
                  and getattr(s.value, "ndim", 0) == 3)
    return [TableRows(names)] if names else []
