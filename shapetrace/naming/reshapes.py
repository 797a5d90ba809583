"""Reading a reshape as splits and merges of named factors.

A reshape is legal exactly when the new axes can be cut from the old factor sequence, in order,
splitting a factor only where its size allows (``reshape_axes``). ``reshape_check(rec)`` reads
one recorded view/reshape/flatten/unflatten that way; ``reshape-jumble`` reports the ones that
are not."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.dims import Dims
from ..base.ops import (
    SPLIT_MERGES,
    ints,
)
from ..base.records import OpRecord
from .axes import Factor, fresh_axes
from .pieces import Piece, cut, foreign, fuse

# --- reshape ----------------------------------------------------------------------------------

@dataclass(slots=True)
class ReshapeCheck:
    """The outcome of reading a reshape as splits and merges of factors."""

    ok: bool
    axes: tuple  # the new axes (fresh, size-named ones when not ok)
    bad_axis: int | None = None  # the first new axis that could not be cut from the old factors
    took: tuple = ()  # the old factors that new axis would mix



def reshape_axes(axes: tuple, new_shape: tuple[int, ...], dims: Dims) -> ReshapeCheck:
    if 0 in new_shape:
        # An empty tensor has no layout to keep or break: name its axes by size, claim nothing.
        return ReshapeCheck(True, fresh_axes(new_shape, dims))
    factors, owner = [], []  # the factors in order, and the old axis each belongs to
    for a, axis in enumerate(axes):
        for f in axis:
            if f[0] != 1:
                factors.append(f)
                owner.append(a)
    whole = [True] * len(factors)  # False once a factor has been cut: its parts are pieces
    original = list(factors)
    n = len(factors)
    k = 0  # the next factor to take; factors[k] is replaced by the rest when one is cut
    out = []
    #: (new axis, the old axes it takes factors of, those it takes a piece cut by size of)
    joined: list[tuple[int, set[int], set[int]]] = []
    for i, size in enumerate(new_shape):
        if size == 1:
            out.append(())
            continue
        if k < n and factors[k][0] == size:  # one whole factor: most axes
            out.append((factors[k],))
            joined.append((i, {owner[k]}, set() if whole[k] else {owner[k]}))
            k += 1
            continue
        taken: list[Factor] = []
        parts: list[tuple[int, bool]] = []  # (old axis, whole factor) of each factor taken
        prod = 1
        while prod < size and k < n:
            f = factors[k]
            if prod * f[0] <= size:
                taken.append(f)
                parts.append((owner[k], whole[k]))
                k += 1
                prod *= f[0]
                continue
            need, rem = divmod(size, prod)
            if rem == 0 and f[0] % need == 0 and not foreign(f, _whole_axes(taken, parts, owner)):
                major, factors[k] = cut(f, need, dims)
                taken.append(major)
                parts.append((owner[k], False))
                whole[k] = False
                prod *= need
                continue
            break
        if prod != size:
            return _not_split(factors, new_shape, dims, i, tuple(taken) + tuple(factors[k:k + 1]))
        if _straddles(parts):  # what it mixes: the old axes it takes parts of, whole
            mixed = {a for a, _ in parts}
            return _not_split(factors, new_shape, dims, i,
                              tuple(f for f, a in zip(original, owner) if a in mixed))
        out.append(fuse(taken, dims) if len(taken) > 1 else tuple(taken))
        joined.append((i, {a for a, _ in parts}, {a for a, w in parts if not w}))
    if k < n:
        return _not_split(factors, new_shape, dims, len(new_shape) - 1, tuple(factors[k:]))
    scattered = _scattered(joined)
    if scattered is not None:  # an old axis cut and each part joined with another axis
        bad, old = scattered
        return _not_split(factors, new_shape, dims, bad,
                          tuple(f for f, a in zip(original, owner) if a in old))
    return ReshapeCheck(True, tuple(out))


def _whole_axes(taken: list, parts: list[tuple[int, bool]], owner: list[int]) -> list:
    """``taken`` with the factors of an old axis taken whole and entire, one that merges a
    whole factor with pieces (a batch of strips, ``B*Y/3``), read as plain factors: a piece of
    the next axis may follow it (``(L, B*Y/3, 32) -> (L, 2*B*Y/3, 16)``, an attention's heads
    split off its width and merged with the batch of strips), as it may follow any whole axis.
    Pieces alone on their axes (windows ``Y/4``, ``X/4``) keep their order."""
    entire = {a for a, _ in parts if all(w for o, w in parts if o == a)
              and sum(1 for o, _ in parts if o == a) == owner.count(a)
              and any(not isinstance(t[1], Piece) for t, (o, _) in zip(taken, parts) if o == a)}
    return [(t[0], "whole") if o in entire else t for t, (o, _) in zip(taken, parts)]


def _straddles(parts: list[tuple[int, bool]]) -> bool:
    """Whether a new axis joins pieces cut by size from two old axes (``(B, T, C) -> (B, T/4,
    4*H, d)`` at T = 16 deals a quarter of the tokens into each head). Joining whole axes, or
    their named factors, is a merge; a piece of one joined with another whole is a known idiom
    (four neighbouring tokens' features concatenated, ``(B, T/4, 4*C)``)."""
    return len({a for a, whole in parts if not whole}) >= 2


def _scattered(joined: list[tuple[int, set[int], set[int]]]) -> tuple[int, set[int]] | None:
    """An old axis cut by size whose pieces land in two new axes, each joined with another old
    axis: ``(B, H, T, d) -> (B, T, C)`` at H = 4, T = 16 reads as T cut in two, one piece joined
    with the heads and the other with the head size: the heads merged back without their
    transpose. ``(new axis, the old axes it mixes)`` of the second such new axis, or None."""
    seen: dict[int, int] = {}  # old axis -> new axes that join a piece of it with another
    for i, olds, cut_from in joined:
        if len(olds) < 2:
            continue
        for a in cut_from:
            seen[a] = seen.get(a, 0) + 1
            if seen[a] >= 2:
                return i, olds
    return None


def _not_split(factors: list, new_shape: tuple, dims: Dims, bad: int, took: tuple) -> ReshapeCheck:
    if any(f[0] == 0 for f in factors):
        # An empty tensor (a factor of size 0, whatever it is read as) has no layout to keep or
        # break: name its axes by size, claim nothing. Its reading always ends here.
        return ReshapeCheck(True, fresh_axes(new_shape, dims))
    return ReshapeCheck(False, fresh_axes(new_shape, dims), bad, took)



def target_shape(rec: OpRecord) -> tuple[int, ...] | None:
    """The shape a reshape produced, or asked for when it raised."""
    if rec.outputs:
        return rec.outputs[0].shape
    if rec.op not in ("Tensor.view", "Tensor.reshape", "torch.reshape") or not rec.inputs:
        return None
    args = rec.args[1:] if rec.op.startswith("Tensor.") else rec.args[1:2]
    if "shape" in rec.kwargs:
        args = (rec.kwargs["shape"],)
    shape = ints(args)
    if shape is None:
        return None
    shape = list(shape)
    total = math.prod(rec.inputs[0].shape)
    if shape.count(-1) == 1:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or total % known:
            return None
        shape[shape.index(-1)] = total // known
    return tuple(shape) if math.prod(shape) == total else None



def reshape_check(rec: OpRecord, dims: Dims) -> ReshapeCheck | None:
    """A split/merge reshape (view, reshape, flatten ...) read as splits and merges of its
    input's factors; None for other ops and for reshapes that cannot be read."""
    if rec.op not in SPLIT_MERGES or not rec.inputs:
        return None
    shape = target_shape(rec)
    if shape is None or rec.inputs[0].axes is None:
        return None
    if math.prod(shape) != math.prod(rec.inputs[0].shape):
        return None  # x.view(dtype) reinterprets bytes: not a split or merge of axes
    return reshape_axes(rec.inputs[0].axes, shape, dims)
