"""Which input of an attempt a value of its run came from, by identity (``Attempt.input_named``),
followed back through moves and casts to integers: of two inputs of one shape, the one a mask
repeated over heads or an index cast from codes was made from."""

from __future__ import annotations

from ..analysis.graph import made_through
from ..base.ops import INTEGER_CASTS, MOVES

#: what a value passes through on its way from the input: moves, and casts to integers
_PASSING = MOVES | INTEGER_CASTS


def input_behind(failed, meta) -> tuple[object | None, str | None]:
    """``(the value from outside the run, its input's name)`` that ``meta`` was made from by
    moves and casts alone; the name is None where the trace met no input there (a parameter,
    or an input first read by the op that failed)."""
    _, start = made_through(meta, failed.trace.records, _PASSING, depth=16)
    return start, (failed.input_named(start) if start is not None else None)


def inputs_read_by(failed, names) -> tuple[str, ...]:
    """The inputs of ``names`` the op that failed read (``mask.repeat(h, 1, 1)``,
    ``mask.unsqueeze(-1)``); () when none is found."""
    op = failed.failed_op
    read: list[str] = []
    for meta in op.inputs if op is not None else ():
        name = input_behind(failed, meta)[1]
        if name in names and name not in read:
            read.append(name)
    return tuple(read)
