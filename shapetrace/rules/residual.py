"""residual-of-itself: a residual connection that adds a value to a dropped-out copy of itself.

A residual block returns ``x + dropout(sublayer(x))``: the skip connection carries the block's
input around the sublayer. When the sublayer's output has been written over ``x`` first
(``x = self.attn(x)``, then ``x = x + self.dropout(x)``), the sum is the sublayer's output added
to a dropped-out copy of itself: in eval, twice the output; the block's input reaches nothing
past the sublayer, and no gradient flows around it. Read from the trace: an addition whose two
operands are one tensor and a dropout of that very tensor (the dropout is recorded in eval
too, where it returns its input itself: both operands are then the dropout's output).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.ops import ADDS, DROPOUTS
from .registry import diagnostic

if TYPE_CHECKING:
    from ..analysis.facts import Analysis

#: additions of two tensors, written out or in place


def check_self_residual(analysis: Analysis):
    records = analysis.records
    for rec in analysis.records_of(ADDS):
        if rec.internal or len(rec.inputs) != 2:
            continue
        first, second = rec.inputs
        for kept, dropped in ((first, second), (second, first)):
            made = dropped._made_by
            if made is None or kept._made_by is None:
                continue
            drop = records[made]
            # in eval a dropout returns its input itself: both operands are then its output
            if drop.op not in DROPOUTS or not drop.inputs or (
                    drop.inputs[0] is not kept and kept is not dropped):
                continue
            where = f" at line {drop.line}" if drop.line is not None and drop.line != rec.line else ""
            shape = analysis.shape_of(kept)
            message = (f"adds {shape} to a dropout of itself{where}: in eval the sum is twice "
                       f"that value, and the residual carries no input around the sublayer that "
                       f"made it (its input was written over before the skip)")
            hint = ("Keep the block's input for the skip connection: `h = self.sublayer(x)` then "
                    "`x = x + self.dropout(h)`.")
            yield diagnostic("residual-of-itself", message, hint, rec=rec)
            break
