"""rotary-pairing: a rotary embedding that does not rotate.

Rotary positions turn each pair of a head's features by an angle that grows with the position:
``x * cos + rotate(x) * sin``, where ``rotate`` pairs each feature with another (the two halves,
``cat(-x2, x1)``; or neighbours, ``stack(-x[..., 1::2], x[..., ::2])``) and the table holds each
angle once per pair (``cat(freqs, freqs)`` for halves, ``repeat_interleave(2)`` for neighbours).
A turn keeps every vector's length, and that alone makes q·k depend on the distance between two
positions and not on where they sit. When the table pairs the features one way and ``rotate``
the other, each feature is mixed with a partner turned by another angle: lengths change, and
scores change with absolute positions.

Read from a recorded float64 run, never from names: an addition of two products, one of a tensor
and a table made by ``cos`` from angles (cut, repeated, concatenated, reshaped, cast: nothing
multiplied in), the other of that same tensor moved about (cut, negated, concatenated, stacked,
reshaped) and a table made by ``sin``. The length of each vector along the last axis before and
after is compared; a table scaled by anything (xPos) is not read.
"""

from __future__ import annotations

from ..base.diagnostics import Diagnostic
from ..base.ops import CASTS, EXPANDS, MULS, PERMUTES, RESHAPES, base_name
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe

_ADDS = frozenset({"+", "Tensor.add", "torch.add"})
#: ops that only place values (a table's angles, a tensor's features) somewhere else
_PLACES = RESHAPES | PERMUTES | EXPANDS | CASTS | frozenset(
    {"[]", "torch.cat", "torch.concat", "torch.stack", "Tensor.repeat_interleave",
     "torch.repeat_interleave", "Tensor.repeat", "Tensor.chunk", "torch.chunk", "Tensor.split",
     "torch.split", "Tensor.unbind", "torch.unbind", "Tensor.narrow", "torch.narrow"})
#: negation, the other half of ``rotate``
_NEGATIONS = frozenset({"-x", "Tensor.neg", "torch.neg", "Tensor.negative", "torch.negative"})
_DEPTH = 12
#: a relative change of length beyond rounding (float64)
_RTOL = 1e-6


def rotations_kept(probe: Probe) -> list[Diagnostic]:
    """A finding for each rotary table whose turns change lengths in a recorded run (one for q
    and k turned by it), at the first such turn."""
    run = locate.record(probe, probe.args, grad=False)
    records = run.records
    values = {step.rec.index: step.outputs for step in run.steps}
    found: list[Diagnostic] = []
    seen: set = set()
    for rec in records:
        if rec.op not in _ADDS or len(rec.inputs) != 2 or not rec.outputs:
            continue
        turn = _turn(records, rec)
        if turn is None:
            continue
        x_meta, cos_rec = turn
        x, y = _value(values, x_meta), _value(values, rec.outputs[0])
        if x is None or y is None or x.shape != y.shape or not x.is_floating_point():
            continue
        before, after = x.norm(dim=-1), y.norm(dim=-1)
        top = float(before.abs().max())
        change = float((after - before).abs().max()) / top if top > 0 else 0.0
        if change <= _RTOL or (cos_rec.file, cos_rec.line) in seen:
            continue  # q and k turned by one table: one finding
        seen.add((cos_rec.file, cos_rec.line))
        table = f" (the cos table at line {cos_rec.line})" if cos_rec.line is not None else ""
        message = (f"the rotary turn changes each vector's length (by up to {change:.0%}): the "
                   f"features it turns together do not share an angle{table}, so q·k depends on "
                   f"absolute positions, not on the distance between them")
        hint = ("Pair the table with the rotation: halves rotated (`cat(-x2, x1)`) take "
                "`cat(freqs, freqs)`; neighbours rotated (`x[..., ::2]`, `x[..., 1::2]`) take "
                "`freqs.repeat_interleave(2, -1)`.")
        found.append(diagnostic("rotary-pairing", message, hint, rec=rec))
    return found


def _value(values: dict, meta):
    outs = values.get(meta._made_by) if meta._made_by is not None else None
    return outs[meta._slot] if outs is not None and meta._slot < len(outs) else None


def _turn(records: list, add) -> tuple | None:
    """``(the tensor turned, the cos record)`` when ``add`` is ``x * cos + rotate(x) * sin``."""
    made = [records[m._made_by] if m._made_by is not None else None for m in add.inputs]
    if any(r is None or r.op not in MULS or len(r.inputs) != 2 for r in made):
        return None
    for first, second in ((made[0], made[1]), (made[1], made[0])):
        for x, cos_side in (first.inputs, first.inputs[::-1]):
            cos_rec = _table(records, cos_side, "cos")
            if cos_rec is None:
                continue
            for moved, sin_side in (second.inputs, second.inputs[::-1]):
                if moved is not x and _table(records, sin_side, "sin") is not None \
                        and _moved_from(records, moved, x, _DEPTH):
                    return x, cos_rec
    return None


def _table(records: list, meta, kind: str):
    """The ``cos`` (or ``sin``) record ``meta`` is made from by placing its values alone."""
    for _ in range(_DEPTH):
        if meta._made_by is None:
            return None
        rec = records[meta._made_by]
        if base_name(rec.op) == kind:
            return rec
        if rec.op not in _PLACES or not rec.inputs:
            return None
        meta = rec.inputs[0]
    return None


def _moved_from(records: list, meta, source, depth: int) -> bool:
    """Whether ``meta`` holds ``source``'s values alone, cut, negated and placed elsewhere."""
    if meta is source:
        return True
    if depth <= 0 or meta._made_by is None:
        return False
    rec = records[meta._made_by]
    if rec.op not in _PLACES and not (rec.op in _NEGATIONS and len(rec.inputs) == 1):
        return False
    return bool(rec.inputs) and all(_moved_from(records, m, source, depth - 1) for m in rec.inputs)
