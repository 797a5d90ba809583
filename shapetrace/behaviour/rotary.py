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
and a table, the other of that same tensor moved about (cut, negated, concatenated, stacked,
reshaped, written into a copy) and a second table, where the two tables are a cosine and a sine
of the same angles (``c² + s² = 1`` everywhere, whether made in forward or cached as buffers).
The length of each vector along the last axis before and after is compared; tables scaled by
anything (xPos) are not a turn and are not read.

Where the finding goes: a rotation that turns no pair (each of its features is one of x's,
negated or not, but turned twice x is not -x) is wrong whatever the table holds, and is named;
a rotation that turns pairs puts the fault in the table, at the op that lays its angles out
along the features (repeated, interleaved, concatenated) nearest the turn, else where it was
made.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..base.diagnostics import Diagnostic
from ..base.ops import ADDS, DROPOUTS, MOVES, MULS
from ..base.source import display_path
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe

#: ops that only place values (a table's angles, a tensor's features) somewhere else
_PLACES = (MOVES - DROPOUTS) | frozenset(
    {"torch.cat", "torch.concat", "torch.stack", "Tensor.chunk", "torch.chunk", "Tensor.split",
     "torch.split", "Tensor.unbind", "torch.unbind", "Tensor.narrow", "torch.narrow",
     "[]="})  # ``turned[..., :h] = -x[..., h:]``: a write places values too
#: negation, the other half of ``rotate``
_NEGATIONS = frozenset({"-x", "Tensor.neg", "torch.neg", "Tensor.negative", "torch.negative"})
_DEPTH = 12
#: a relative change of length beyond rounding (float64)
_RTOL = 1e-6


def rotations_kept(probe: Probe) -> locate.Reader:
    """Each rotary table whose turns change lengths, read from a recorded run
    (``locate.Reader``): a finding for each (one for q and k turned by it), at the first turn."""
    operands: dict[int, list] = {}
    bases: dict[int, list] = {}  # the tensors the operands are views of (a cached buffer)

    def keep_operands(rec, outs, args, kwargs) -> None:  # a cached table has no producer
        if rec.op in MULS and len(args) == 2 and all(isinstance(a, Tensor) for a in args):
            operands[rec.index] = [a.detach().clone() for a in args]
            bases[rec.index] = [a if a._base is None else a._base for a in args]

    def judge(run: locate.Run) -> list[Diagnostic]:
        records = run.records
        values = {step.rec.index: step.outputs for step in run.steps}
        found: list[Diagnostic] = []
        seen: set = set()
        for rec in records:
            if rec.op not in ADDS or len(rec.inputs) != 2 or not rec.outputs:
                continue
            turn = _turn(records, rec, operands)
            if turn is None:
                continue
            x_meta, cos_rec, slot, moved = turn
            x, y = _value(values, x_meta), _value(values, rec.outputs[0])
            if x is None or y is None or x.shape != y.shape or not x.is_floating_point() \
                    or x.shape[-1] % 2:
                continue  # an odd number of features (the probe's head size) has no pairs to turn
            before, after = x.norm(dim=-1), y.norm(dim=-1)
            top = float(before.abs().max())
            change = float((after - before).abs().max()) / top if top > 0 else 0.0
            table, made = _source(records, cos_rec.inputs[slot])
            key = ("made", made.index) if made is not None else ("outside", id(table))
            if change <= _RTOL or key in seen:
                continue  # q and k turned by one table: one finding
            seen.add(key)
            made_at, what = _made(records, made, bases[cos_rec.index][slot], probe.model)
            rotated = records[moved._made_by] if moved._made_by is not None else None
            turn = _quarter_turn(x, _value(values, moved))
            if turn is False and rotated is not None and rotated.line is not None:
                found.append(_unpaired_rotation(rec, rotated, made_at, change))
                continue
            tiled = _tiled(records, cos_rec.inputs[slot]) if turn else None
            if tiled is not None:  # the rotation pairs features: the table's layout does not
                made_at, what = (tiled.file, tiled.line), f"laid out at line {tiled.line}"
            if rotated is not None and rotated.line is not None and made_at is not None and (
                    display_path(rotated.file), rotated.line) != (display_path(made_at[0]), made_at[1]):
                what += f", the rotation that pairs them at line {rotated.line}"
            where = f" (the cosine table {what})" if what else ""
            message = (f"the rotary turn changes each vector's length (by up to {change:.0%}): the "
                       f"features it turns together do not share an angle{where}, so q·k depends on "
                       f"absolute positions, not on the distance between them")
            found.append(diagnostic("rotary-pairing", message, _HINT, rec=rec, made_at=made_at))
        return found

    return locate.Reader(keep_operands, judge)


_HINT = ("Pair the table with the rotation: halves rotated (`cat(-x2, x1)`) take "
         "`cat(freqs, freqs)`; neighbours rotated (`x[..., ::2]`, `x[..., 1::2]`) take "
         "`freqs.repeat_interleave(2, -1)`.")


def _quarter_turn(x: Tensor | None, moved: Tensor | None) -> bool | None:
    """Whether ``moved`` is ``x`` turned a quarter in pairs of features: each of its features is
    one of ``x``'s, negated or not (a signed permutation J of the last axis), and turning twice
    gives ``-x`` (J² = -1: each feature is paired with one partner, one of the two negated).
    None when ``moved`` is not a signed permutation of ``x`` (a rotation not read here)."""
    if x is None or moved is None or x.shape != moved.shape or x.dim() < 1 or not x.is_floating_point():
        return None
    n = x.shape[-1]
    if n < 2 or n > 1024:
        return None
    xs, ys = x.reshape(-1, n), moved.reshape(-1, n)
    scale = float(xs.abs().max()) or 1.0
    close = (ys.T[:, None, :] - xs.T[None, :, :]).abs().amax(-1) <= 1e-9 * scale  # (y, x): y = x
    flipped = (ys.T[:, None, :] + xs.T[None, :, :]).abs().amax(-1) <= 1e-9 * scale  # y = -x
    partner: list[tuple[int, int]] = []
    for j in range(n):
        same, negated = close[j].nonzero().flatten(), flipped[j].nonzero().flatten()
        if len(same) + len(negated) != 1:
            return None  # not one feature of x (a mix, or features equal by chance)
        partner.append((int(same[0]), 1) if len(same) else (int(negated[0]), -1))
    return all(partner[i][0] == j and sign * partner[i][1] == -1
               for j, (i, sign) in enumerate(partner))


def _tiled(records: list, meta):
    """The op nearest the product that lays a table's angles out along the features (repeated,
    interleaved, concatenated or stacked), past cuts and moves; None when none is met before
    the op that made the values."""
    for _ in range(_DEPTH):
        if meta._made_by is None:
            return None
        rec = records[meta._made_by]
        if rec.op not in _PLACES or not rec.inputs:
            return None
        if rec.op in _LAYOUTS and rec.line is not None:
            return rec
        meta = rec.inputs[0]
    return None


#: ops that lay values out along an axis: where a table's angles are tiled to the features
_LAYOUTS = frozenset({"Tensor.repeat", "Tensor.repeat_interleave", "torch.repeat_interleave",
                      "torch.cat", "torch.concat", "torch.stack", "torch.tile", "Tensor.tile"})


def _unpaired_rotation(rec, rotated, made_at, change: float) -> Diagnostic:
    """The finding for a rotation that does not turn pairs of features (turned twice, a vector is
    not its own negative): it is wrong whatever the table holds."""
    message = (f"the rotary turn changes each vector's length (by up to {change:.0%}): the "
               f"rotation at line {rotated.line} does not turn pairs of features (turned twice, a "
               f"vector is not its own negative), so q·k depends on absolute positions, not on "
               f"the distance between them")
    hint = ("Split and join the features the same way: halves (`x1, x2 = x.chunk(2, -1)`, then "
            "`cat(-x2, x1)`) or neighbours (`x[..., ::2]`, `x[..., 1::2]`, then `stack((-x2, x1), "
            "-1).flatten(-2)`), and lay the table out to match.")
    return diagnostic("rotary-pairing", message, hint, rec=rec,
                      made_at=(rotated.file, rotated.line))


def _value(values: dict, meta):
    outs = values.get(meta._made_by) if meta._made_by is not None else None
    return outs[meta._slot] if outs is not None and meta._slot < len(outs) else None


def _turn(records: list, add, operands: dict) -> tuple | None:
    """``(the tensor turned, the product by the cosine, the cosine's place in that product, the
    tensor turned moved into place)`` when ``add`` is ``x * c + moved(x) * s`` with ``c`` and
    ``s`` a cosine and a sine of the same angles."""
    made = [records[m._made_by] if m._made_by is not None else None for m in add.inputs]
    if any(r is None or r.op not in MULS or len(r.inputs) != 2 or r.index not in operands
           for r in made):
        return None
    for first, second in ((made[0], made[1]), (made[1], made[0])):
        for i in (0, 1):
            x = first.inputs[i]
            for j in (0, 1):
                moved = second.inputs[j]
                if moved is x or not _moved_from(records, moved, x, _DEPTH):
                    continue
                if cosine_and_sine(operands[first.index][1 - i], operands[second.index][1 - j]):
                    return x, first, 1 - i, moved
    return None


def _made(records: list, made, base, model) -> tuple[tuple | None, str]:
    """``((file, line), words)`` of where the cosine table was made (``made``, the op its values
    come from, or None for a table from outside the trace): the op in forward that put its angles
    in place (repeated or concatenated) before ``cos``, or, for a table cached on the module, the
    constructor's line that stores it; ``(None, "")`` when neither is found."""
    if made is None:
        return _cached(base, model)
    paired = records[made.inputs[0]._made_by] if made.inputs and made.inputs[0]._made_by is not None \
        else None  # the op before the cosine: where the angles were paired
    at = paired if paired is not None and paired.op in _PLACES and paired.line is not None else made
    return ((at.file, at.line), f"made at line {at.line}") if at.line is not None else (None, "")


def _cached(base, model) -> tuple[tuple | None, str]:
    """The constructor line that stores ``base``, a buffer or parameter of ``model``."""
    import inspect

    for path, owner in model.named_modules():
        for name, tensor in list(owner.named_buffers(recurse=False)) + list(owner.named_parameters(recurse=False)):
            if tensor is not base:
                continue
            for cls in type(owner).__mro__:  # the class that stores it, or a base of it
                try:
                    lines, start = inspect.getsourcelines(cls)
                    file = inspect.getsourcefile(cls)
                except (OSError, TypeError):
                    continue
                for i, text in enumerate(lines):
                    if f'"{name}"' in text or f"'{name}'" in text or f".{name} =" in text:
                        return (display_path(file), start + i), f"cached as `{name}` at line {start + i}"
            return None, f"cached as `{name}`"
    return None, ""


def _source(records: list, meta) -> tuple:
    """``(meta, record)``: where a table's values come from, past the ops that only place them:
    the record that made them, or None for a tensor from outside the trace (a cached buffer)."""
    for _ in range(_DEPTH):
        if meta._made_by is None:
            return meta, None
        rec = records[meta._made_by]
        if rec.op not in _PLACES or not rec.inputs:
            return meta, rec
        meta = rec.inputs[0]
    return meta, records[meta._made_by] if meta._made_by is not None else None


def cosine_and_sine(c: Tensor, s: Tensor) -> bool:
    """Whether ``c`` and ``s`` are a cosine and a sine of the same angles: ``c² + s² = 1``."""
    try:
        c, s = torch.broadcast_tensors(c, s)
    except RuntimeError:
        return False
    if not (c.is_floating_point() and s.is_floating_point()) or c.numel() == 0:
        return False
    varied = float((c.max() - c.min()).abs()) > 1e-3 or float((s.max() - s.min()).abs()) > 1e-3
    return varied and bool(torch.allclose(c * c + s * s, torch.ones_like(c), atol=1e-5))


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
