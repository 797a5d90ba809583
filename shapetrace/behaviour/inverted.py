"""An inverted causal mask, read from the values of the run in which a causal leak was found.

When the first op that sees the future is a softmax, the ops between its scores and it that hide
positions (a ``masked_fill``, a ``where``, an additive mask) are read from their values: the
positions an op changed, over the (query, key) grid of the scores. A mask that hides exactly
each query's earlier keys (with or without its own) and leaves every later key in place is the
causal mask the wrong way round (``triu`` for ``tril``, ``== 1`` for ``== 0``): the leak is then
reported at the op that applied it, with the line that built the mask. A product that sets
exactly each query's later keys to 0 and leaves the rest is a causal mask multiplied into the
scores (``scores * tril``): a score of 0 is no hidden key (the softmax weighs it exp(0) = 1), and
the leak is reported at that product. A mask cut from its (n, n) table by an index where a
slice was meant (``b[:, :, T, T]`` for ``b[:, :, :T, :T]``) is one entry, the same for every
query and key, and hides none: the leak is reported at the index. Anything else (a window, a
padding mask, a mask that hides nothing, an op the values cannot read) says nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..analysis.graph import Graph
from ..base.ops import (CASTS, DROPOUTS, EQUALITIES, EXPANDS, INTEGER_CASTS, MASKED_FILLS, MULS, NEGATIONS,
                        PERMUTES, RESHAPES, SOFTMAXES, WHERES, softmax_dim)
from ..base.records import OpRecord
from ..rules.scale import scores_steps, tracked_slot
from .locate import Run

#: Ops on the way to the softmax that may hide positions.
#: ops that say the mask they read again (equality tests with 0 or 1 do, for a 0/1 mask)
_RESTATES = RESHAPES | PERMUTES | EXPANDS | CASTS | INTEGER_CASTS | NEGATIONS
#: the most ops followed back from a fill to the op that built its mask
_DEPTH = 16
_HIDES = MASKED_FILLS | WHERES | frozenset({"+", "Tensor.add", "torch.add", "Tensor.add_"})
#: A hidden score is at most this (a fill of -inf, -1e9, finfo.min; not a bias).
_HIDDEN = -1e3


@dataclass
class Inverted:
    """The op that applied an inverted causal mask, and the op that built the mask."""

    applied: OpRecord
    built: OpRecord | None
    own: bool  # each query's own key is hidden too
    #: the mask multiplied the scores: the later keys' scores made 0, which the softmax still
    #: weighs (exp(0) = 1), not hidden
    zeroed: bool = False
    #: the mask was cut to one entry of its (n, n) table (``b[:, :, T, T]`` for ``[..., :T, :T]``):
    #: one value for every query and key, hiding none; ``built`` is the op that cut it
    cut: bool = False


def inverted_mask(rec: OpRecord | None, run: Run | None) -> Inverted | None:
    """The inverted causal mask applied to the scores of the softmax ``rec`` (or of the softmax
    whose weights ``rec`` contracts, through ops that only move or drop them out), or None."""
    if rec is None or run is None or not rec.inputs:
        return None
    graph = Graph(run.records)
    rec = _weighing_softmax(graph, rec)
    picked = softmax_dim(rec) if rec is not None else None
    if picked is None:
        return None
    scores = graph.scores(rec.inputs[0], picked[0])
    if scores is None:
        return None
    values = {step.rec.index: step.outputs for step in run.steps}
    for op, slot, _, nxt in scores_steps(scores):
        cut = _one_entry(graph, op, slot, nxt)
        if cut is not None:
            return Inverted(op, cut, False, cut=True)
        before, after = _value(values, op.inputs[slot]), _value(values, op.outputs[0])
        if op.op in _HIDES:
            own = _past_hidden(before, after, nxt)
            if own is not None:
                return Inverted(op, mask_builder(graph, op, values), own)
        elif op.op in MULS and _future_zeroed(before, after, nxt):
            return Inverted(op, mask_builder(graph, op, values), False, zeroed=True)
    return None


def _one_entry(graph: Graph, op: OpRecord, slot: int, key: int) -> OpRecord | None:
    """The index that cut the mask ``op`` applies to the scores down to one entry of its table:
    an operand made by ``[]`` (past moves and casts) from a table whose last two axes are both
    at least as long as the keys, holding one value over the scores' (query, key) grid. None
    otherwise."""
    if op.op not in MULS | _HIDES or not op.outputs:
        return None
    shape = op.outputs[0].shape
    T = shape[key] if -len(shape) <= key < len(shape) else 0
    queries = [a for a in range(len(shape)) if a != key % len(shape) and shape[a] == T]
    if T < 3 or len(queries) != 1:
        return None
    grid = (queries[0] - len(shape), key % len(shape) - len(shape))  # from the right
    for other, meta in enumerate(op.inputs):
        if other == slot:
            continue
        made = graph.producer(meta)
        for _ in range(_DEPTH):
            if made is None or made.op != "[]" and made.op not in _RESTATES or not made.inputs:
                break
            if made.op == "[]":
                table, cut = made.inputs[0].shape, made.outputs[0].shape
                flat = all(-a > len(cut) or cut[a] == 1 for a in grid)
                if len(table) >= 2 and min(table[-2:]) >= T and flat:
                    return made
                break
            made = graph.producer(made.inputs[0])
    return None


def _weighing_softmax(graph: Graph, rec: OpRecord) -> OpRecord | None:
    """``rec`` when it is a softmax; else the softmax whose weights one of its operands is,
    past dropout, moves and casts (``dropout(softmax(s)) @ v``); None otherwise."""
    if rec.op in SOFTMAXES:
        return rec
    for meta in rec.inputs:
        made = graph.producer(meta)
        for _ in range(_DEPTH):
            if made is None or made.op in SOFTMAXES or not made.inputs \
                    or made.op not in _RESTATES | DROPOUTS:
                break
            made = graph.producer(made.inputs[0])
        if made is not None and made.op in SOFTMAXES:
            return made
    return None


def _future_zeroed(before: Tensor | None, after: Tensor | None, key: int) -> bool:
    """Whether a product set exactly each query's later keys to 0 and left the rest as they
    were: a causal mask of 0s and 1s multiplied into the scores, where it must hide them."""
    grid = _changed_grid(before, after, key)
    if grid is None or not bool((after[(after != before)] == 0).all()):
        return False
    return torch.equal(grid, torch.ones(grid.shape, dtype=torch.bool).triu(1))


def _changed_grid(before: Tensor | None, after: Tensor | None, key: int) -> Tensor | None:
    """The (query, key) grid of the positions an op changed, when it is the same in every head
    and sample; None otherwise (or when nothing changed)."""
    if before is None or after is None or before.shape != after.shape or not after.is_floating_point():
        return None
    T = after.shape[key]
    queries = [a for a in range(after.dim()) if a != key and after.shape[a] == T]
    if T < 3 or len(queries) != 1:
        return None
    changed = (after != before) & ~(before.isnan() & after.isnan())
    if not bool(changed.any()):
        return None
    grid = changed.movedim((queries[0], key), (-2, -1)).reshape(-1, T, T)
    return grid[0] if bool((grid == grid[:1]).all()) else None


def _value(values: dict[int, list[Tensor]], meta) -> Tensor | None:
    outs = values.get(meta._made_by) if meta._made_by is not None else None
    return outs[meta._slot].detach() if outs is not None and meta._slot < len(outs) else None


def _past_hidden(before: Tensor | None, after: Tensor | None, key: int) -> bool | None:
    """Whether the op hid each query's earlier keys and kept the later ones: True when the
    query's own key is hidden too, False when it is kept, None for any other pattern. The
    query axis is the one other axis as long as the keys."""
    hidden = _changed_grid(before, after, key)
    if hidden is None:
        return None  # nothing, or not the same positions in every head and sample
    if float(after[(after != before) & ~(before.isnan() & after.isnan())].amax()) > _HIDDEN:
        return None
    T = hidden.shape[-1]
    lower = torch.ones(T, T, dtype=torch.bool).tril(-1)
    if torch.equal(hidden, lower):
        return False
    if torch.equal(hidden, lower | torch.eye(T, dtype=torch.bool)):
        return True
    return None


def mask_builder(graph: Graph, applied: OpRecord, values: dict | None = None, *,
                 elsewhere: bool = True, handed: bool = True) -> OpRecord | None:
    """The op that made the mask ``applied`` used, followed back past the ops on the line that
    applied it (``~mask``, ``mask[:T, :T] == 0``) and past the ops that only say it again
    (moves, casts, ``~``, an index of ``None``s, ``keep == 0`` of a 0/1 mask, which ``values``
    tell), when it is on another line; with ``elsewhere`` False, the first op that made it on the
    line itself when none is elsewhere. ``handed`` False: None for a mask that came from outside
    the run (handed in), only said again in it."""
    if applied.op in MASKED_FILLS:
        slots = [1]
    elif applied.op in WHERES:
        slots = [0] if applied.op == "torch.where" else [1]
    else:
        slots = [s for s in range(len(applied.inputs)) if s != tracked_slot(applied)]
    for slot in slots:
        made = first = graph.producer(applied.inputs[slot]) if slot < len(applied.inputs) else None
        for _ in range(_DEPTH):
            if made is None or not made.inputs or \
                    made.line != applied.line and not _restates(made, values or {}):
                break
            before = graph.producer(made.inputs[0])
            if before is None:
                if not handed:
                    return None
                break
            made = before
        if made is not None and made.line and made.line != applied.line and made.source:
            return made
        if not elsewhere and first is not None:
            return first
    return None


def _restates(rec: OpRecord, values: dict) -> bool:
    """Whether ``rec`` only says its input mask again (see :func:`mask_builder`)."""
    if rec.op in _RESTATES:
        return True
    if rec.op == "[]":
        index = rec.arg(1)
        return all(i is None or i is Ellipsis or i == slice(None)
                   for i in (index if isinstance(index, tuple) else (index,)))
    if rec.op in EQUALITIES and len(rec.inputs) == 1 and rec.arg(1) in (0, 1):
        v = _value(values, rec.inputs[0])
        return v is not None and bool(((v == 0) | (v == 1)).all())
    return False
