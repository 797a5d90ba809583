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


# --- residual-twice ---------------------------------------------------------------------------

#: additions that make a new tensor (an in-place one changes an operand it may share)
_SUMS = frozenset({"+", "Tensor.add", "torch.add", "Tensor.__radd__"})
#: the most additions followed into one sum
_TERMS = 6


def check_residual_twice(analysis: Analysis):
    """A sum that counts one value twice: a residual wrapper that already adds its input
    (``fn(x) + x``) and a caller that adds it again (``x = attn(x) + x``)."""
    records = analysis.records
    outer = [rec for rec in analysis.records_of(_SUMS)
             if not rec.internal and rec.error is None and len(rec.inputs) == 2
             and rec.inputs[0] is not rec.inputs[1]  # x + x: residual-of-itself's, or doubling
             and any(m._made_by is not None and records[m._made_by].op in _SUMS
                     for m in rec.inputs)]  # a sum of a sum: only then is the graph read
    if not outer:
        return
    consumers = analysis.graph.consumers
    for rec in outer:
        terms: list = []
        inner: list = []
        _terms(rec, records, consumers, terms, inner, _TERMS)
        if not inner:
            continue
        twice = next((t for i, t in enumerate(terms) if any(t is u for u in terms[:i])), None)
        if twice is None or not twice.dtype.is_floating_point or len(twice.shape) < 2:
            continue
        first = next((s for s in inner if any(m is twice for m in s.inputs)), inner[0])
        if not (first.module or "").startswith((rec.module or "") + "."):
            continue  # added twice by one module's own code (a state and an input injected that
            # begin as one tensor, ``x = block(x, x)``), not by a wrapper and its caller
        shape = analysis.shape_of(twice)
        where = f" (line {first.line})" if first.line is not None and first.line != rec.line else ""
        message = (f"adds {shape} to a sum that already holds it: `{first.source or first.op}`"
                   f"{where} added it once, and this addition adds it again, so the value "
                   f"counts twice (a residual wrapper that adds its input, and a caller that "
                   f"adds the skip itself)")
        hint = ("Add the skip once: `x = block(x)` when the block returns `fn(x) + x`, or "
                "`x = fn(x) + x` around a block that does not.")
        yield diagnostic("residual-twice", message, hint, rec=rec)


def _terms(rec, records, consumers, terms: list, inner: list, budget: int) -> int:
    """The operands of the sum ``rec``, with each operand that is itself a sum read by nothing
    else opened into its own operands (``inner``: the sums opened)."""
    for meta in rec.inputs:
        made = meta._made_by
        src = records[made] if made is not None else None
        if src is not None and budget > 0 and src.op in _SUMS and not src.internal \
                and src.error is None and len(src.inputs) == 2 \
                and len(consumers.get((made, meta._slot), ())) == 1:
            inner.append(src)
            budget = _terms(src, records, consumers, terms, inner, budget - 1)
        else:
            terms.append(meta)
    return budget
