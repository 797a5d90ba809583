"""Constructor values as the project's own code passes them, read again when the forward fails.

shapetrace builds a class with sizes named by their meaning (``num_heads`` -> H, an odd prime),
so that every axis of the run has a name. A module the project only ever builds one way
(``Token_transformer(dim, in_dim=token_dim, num_heads=1)``, whose attention adds its values
back as ``v.squeeze(1)``) cannot run at another head count: the forward failing there says
nothing of the code as it is used. When the first attempt's forward raises and the project's
code passes literal values (``builtby.passed_for``: written out in a call, or a default of the
calling constructor handed on) that differ from what shapetrace chose, the module is built with
those values and run again; a run stands, with a note naming the call. A failure those values
meet too stays the code's (an op-failed finding at its line).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.names import field_size, number_of
from .asked import numbers_in
from .builtby import passed_for
from .guess import Guess

#: the literal types taken from a call: sizes, ratios, switches and names (never a class)
_PLAIN = (int, float, bool, str)


@dataclass(frozen=True)
class PassedValues(Guess):
    """``given``: the constructor arguments the caller set (never changed)."""

    given: frozenset

    def read_by(self, failed, plan) -> bool:
        """The forward failed at an op whose operands or error name a value shapetrace chose
        where the project's code passes another (``shape '[5, 7, 3, 11, 143]' is invalid``
        with ``num_heads`` chosen 11): a failure of sizes no name chose says nothing of this."""
        sizes = _sizes(failed)
        return any(type(plan.init[name]) is int and plan.init[name] in sizes
                   for name, _, _ in self._passed(plan))

    def others(self, plan, failed) -> Iterator:
        sizes = _sizes(failed)  # the values the failure names first
        passed = sorted(self._passed(plan), key=lambda p: not (
            type(plan.init[p[0]]) is int and plan.init[p[0]] in sizes))
        shown = ", ".join(f"{name}={value!r} as {where} passes it" for name, value, where in passed)
        op = failed.failed_op
        at = f" at {op.op}" if op is not None else ""
        first = passed[0][0]
        note = (f"{shown}: built with {first}={plan.init[first]!r} (chosen by its name) the "
                f"forward failed{at}; give --init {first}=VALUE to choose")
        init = {**plan.init, **{name: value for name, value, _ in passed}}
        yield dataclasses.replace(plan, init=init, guesses=(), note=note, reading_of=self)

    def _passed(self, plan) -> list[tuple[str, object, str]]:
        """``(name, value, where)`` of each constructor argument shapetrace chose for which the
        project's code passes another plain literal."""
        cls = plan.request.module
        if plan.init is None or not isinstance(cls, type):
            return []
        found = []
        for name, chosen in plan.init.items():
            if name in self.given or not isinstance(chosen, _PLAIN):
                continue
            passed = passed_for(cls, name)
            if passed is None or not isinstance(passed.value, _PLAIN) \
                    or type(passed.value) is bool and type(chosen) is not bool:
                continue
            if passed.value != chosen:
                found.append((name, passed.value, passed.where))
        return found


def _sizes(failed) -> set[int]:
    """The sizes the op that failed read and the numbers its error names; empty for a forward
    that raised elsewhere."""
    op = failed.failed_op
    if failed.raised is None or op is None or not op.error:
        return set()
    return numbers_in(op.error[1]) | {s for meta in op.inputs for s in meta.shape}


def unset_fields_passed(cls: type, name: str, read) -> tuple[list[str], str] | None:
    """Fields of the config ``read`` (a dict the fields the code reads made) that no name sizes
    (left None, or read from what the code does with them: ``config["num_channels"]`` handed to
    a convolution), set in place from the config the project's code passes as ``name`` written
    out (a script's ``config = {...}``), with where it passes it; None when none is set so."""
    unnamed = [k for k, v in read.items() if v is None or not _named(k)] \
        if isinstance(read, dict) else []
    if not unnamed:
        return None
    passed = passed_for(cls, name)
    if passed is None or not isinstance(passed.value, dict):
        return None
    filled = [k for k in unnamed if passed.value.get(k) is not None and (
        read[k] is None or passed.value[k] != read[k] and isinstance(passed.value[k], _PLAIN))]
    for key in filled:
        read[key] = passed.value[key]
    return ([f"{k}={read[k]!r}" for k in filled], passed.where) if filled else None


def _named(field: str) -> bool:
    """Whether a config field's name states what it holds: a size (``hidden_size``), a number
    (``dropout``, ``num_layers``)."""
    return field_size(field) is not None or number_of(field, field=True) is not None


def note_filled(filled: tuple[list[str], str] | None, name: str, notes: list[str] | None) -> None:
    if filled and notes is not None:
        fields, where = filled
        notes.append(f"{name}: {', '.join(fields)} as the config {where} passes, where no name "
                     f"says; give --init {name}.FIELD=VALUE to choose")
