"""Axes as named factors: how an axis is written and how its names read.

An axis is a tuple of *factors*, major to minor; a factor is ``(size, name)``. A tensor that
enters the trace from outside gets one factor per axis, named from its size by the run's
``Dims`` (143 reads as ``C``, 429 as ``3*C``); ``provenance`` carries factors along through
ops. This module makes fresh axes, writes them (``(B, H, T, d)``), measures them and
broadcasts them."""

from __future__ import annotations

from ..base.dims import Dims

Factor = tuple  # (size, name)


Factor = tuple  # (size, name)
Axis = tuple  # tuple[Factor, ...]


# --- formatting -------------------------------------------------------------------------------

def fresh_axis(size: int, dims: Dims) -> Axis:
    return () if size == 1 else ((size, dims.label(size)),)



def fresh_axes(shape, dims: Dims) -> tuple:
    return tuple(fresh_axis(s, dims) for s in shape)



def axis_label(axis: Axis, dims: Dims) -> str:
    if not axis:
        return "1"
    names = [name for _, name in axis]
    if len(names) > 1:
        names = _collapse(names, dims)
    return "*".join(names)



def _collapse(names: list[str], dims: Dims) -> list[str]:
    """``H*d`` reads as ``C`` when C is H*d."""
    h, d = dims.get("H"), dims.get("d")
    if h and d and dims.get("C") == h * d:
        out, i = [], 0
        while i < len(names):
            if names[i] == "H" and i + 1 < len(names) and names[i + 1] == "d":
                out.append("C")
                i += 2
            else:
                out.append(names[i])
                i += 1
        return out
    return names



def format_axes(axes, dims: Dims) -> str:
    if len(axes) == 0:
        return "()"
    if len(axes) == 1:
        return f"({axis_label(axes[0], dims)},)"  # a 1-D shape reads like a Python tuple: (B,)
    return "(" + ", ".join(axis_label(a, dims) for a in axes) + ")"



def axis_size(axis: Axis) -> int:
    if len(axis) == 1:  # most axes are one factor
        return axis[0][0]
    size = 1
    for factor, _ in axis:
        size *= factor
    return size



def broadcast_axes(axes_list, out_shape) -> tuple | None:
    n = len(out_shape)
    out = []
    for i in range(n):
        size = out_shape[i]
        chosen = None
        for axes in axes_list:
            j = i - (n - len(axes))
            if j >= 0 and axis_size(axes[j]) == size:
                chosen = axes[j]
                break
        if chosen is None:
            return None
        out.append(chosen if size != 1 else ())
    return tuple(out)
