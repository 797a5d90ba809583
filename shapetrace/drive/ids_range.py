"""Inputs guessed as real values whose values the forward makes indices: whole numbers below
the table they index.

An input guessed as vectors (``x``: (B, T, C) floats) may hold codes the forward casts to
integers and looks up (``x = x.long(); self.hour_embed(x[:, :, 3])``: calendar fields, category
codes, counts). Drawn from ``randn``, its values cast to negative indices, or to indices past a
small table: the lookup fails on correct code. Such a failure says what the values are: whole
numbers in ``[0, rows)`` of the table that refused them. The input is read again so, as floats
(its dtype is the code's to change); a second table with fewer rows reads it again below that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.ops import EMBEDDINGS
from ..base.specs import InputSpec
from .behind import input_behind
from .guess import Guess


@dataclass(frozen=True)
class CastIndices(Guess):
    """Float inputs (``names``), guessed as real values, that may be codes cast to indices."""

    names: tuple[str, ...]
    restated = True  # a second reading below a smaller table says all the first one did

    def read_by(self, failed, plan) -> bool:
        return _refused(failed, plan, self.names) is not None

    def others(self, plan, failed) -> Iterator:
        name, rows, op = _refused(failed, plan, self.names)
        inputs = tuple(dataclasses.replace(s, high=rows) if isinstance(s, InputSpec) and s.name == name
                       else s for s in plan.inputs)
        where = f" at {op.file}:{op.line}" if op.line is not None else ""
        note = (f"{name} read as whole numbers in [0, {rows}): the forward casts its values to "
                f"indices into a table of {rows} rows ({op.op}{where}); give --input to choose "
                f"(e.g. --input {_spec(inputs, name)})")
        yield dataclasses.replace(plan, inputs=inputs, note=note, reading_of=self)


def _spec(inputs, name: str) -> str:
    return next(str(s) for s in inputs if isinstance(s, InputSpec) and s.name == name)


def _refused(failed, plan, names) -> tuple[str, int, object] | None:
    """``(input name, rows, op)`` when ``failed`` failed at a table lookup (an embedding, or a
    table indexed by a tensor) that refused indices cast from the float input of that name
    (guessed, below no bound yet or below a larger one), else None."""
    op = failed.failed_op
    if op is None or op.error is None or op.error[0] != "IndexError" or len(op.inputs) < 2:
        return None
    if op.op in EMBEDDINGS:
        index, table = op.inputs[0], op.inputs[1]
    elif op.op == "[]":
        table, index = op.inputs[0], op.inputs[1]
    else:
        return None
    if index.dtype is None or index.dtype.is_floating_point or not table.shape:
        return None
    start, named = input_behind(failed, index)
    if start is None or start.dtype is None or not start.dtype.is_floating_point:
        return None
    rows = table.shape[0]
    for arg, name in zip(failed.args, failed.names):
        if name not in names or getattr(arg, "shape", None) is None:
            continue
        if named is not None and name != named:
            continue  # another input of the same shape
        if tuple(arg.shape) != tuple(start.shape) or arg.dtype != start.dtype:
            continue
        spec = next((s for s in plan.inputs if isinstance(s, InputSpec) and s.name == name), None)
        if spec is None or spec.dtype not in ("float", "double", "half", "bfloat16"):
            continue
        bound = spec.high if isinstance(spec.high, int) else None
        if rows >= 1 and (bound is None or rows < bound):
            return name, rows, op
    return None
