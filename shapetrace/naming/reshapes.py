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
from .pieces import cut, foreign, fuse

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
    factors = [f for axis in axes for f in axis if f[0] != 1]
    n = len(factors)
    k = 0  # the next factor to take; factors[k] is replaced by the rest when one is cut
    out = []
    for i, size in enumerate(new_shape):
        if size == 1:
            out.append(())
            continue
        if k < n and factors[k][0] == size:  # one whole factor: most axes
            out.append((factors[k],))
            k += 1
            continue
        taken: list[Factor] = []
        prod = 1
        while prod < size and k < n:
            f = factors[k]
            if prod * f[0] <= size:
                taken.append(f)
                k += 1
                prod *= f[0]
                continue
            need, rem = divmod(size, prod)
            if rem == 0 and f[0] % need == 0 and not foreign(f, taken):
                major, factors[k] = cut(f, need, dims)
                taken.append(major)
                prod *= need
                continue
            break
        if prod != size:
            return _not_split(factors, new_shape, dims, i, tuple(taken) + tuple(factors[k:k + 1]))
        out.append(fuse(taken, dims) if len(taken) > 1 else tuple(taken))
    if k < n:
        return _not_split(factors, new_shape, dims, len(new_shape) - 1, tuple(factors[k:]))
    return ReshapeCheck(True, tuple(out))



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
