"""inverted-norm: a normalisation that multiplies a tensor by its own magnitude.

A norm divides a tensor by a measure of its own size along an axis: its root-mean-square
(``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)``), its standard deviation
(``(x - mean) / torch.sqrt(var + eps)``) or its norm (``x / x.norm(dim=-1, keepdim=True)``).
Whatever the spelling, the powers add up: a mean of squares carries the square of x's scale,
a square root halves that, ``rsqrt``, ``reciprocal`` and ``1 / t`` turn it round, and dividing
by the result turns it round again. A normalisation applies x's scale to x with the power -1,
so that the result has unit scale whatever the input's. The power +1 (``x / torch.rsqrt(ms)``,
``x * x.std(-1, keepdim=True)``) makes the output grow with the square of the input's scale:
the statistic was applied the wrong way round.

Read from the trace: a product or division of a tensor (x itself, or x less its mean or times
a gain) by a chain that starts at a statistic of that same tensor (a mean or sum of its
squares, its var, std or norm) and goes through square roots, powers, reciprocals, and
additions or clamps with a number (an epsilon) only. Any other op in the chain (a learned
scale, another tensor) ends the reading: nothing is said.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.ops import DIVS, MULS, base_name
from .registry import diagnostic

if TYPE_CHECKING:
    from ..analysis.facts import Analysis

#: a statistic of x, and the power of x's scale it carries
_SPREADS = {"var": 2.0, "std": 1.0, "norm": 1.0, "vector_norm": 1.0}
_OF_SQUARES = frozenset({"mean", "sum"})
#: ops of one tensor that raise the statistic to a power
_POWERS = {"sqrt": 0.5, "rsqrt": -0.5, "reciprocal": -1.0}
#: ops that keep the statistic's scale when the other operand is a number (an epsilon)
_KEEPS = frozenset({"add", "sub", "clamp", "clamp_min", "clip", "maximum", "__radd__"})
#: products and quotients: where a statistic is applied, and (by a number) a step that keeps its power
_SCALINGS = MULS | DIVS
_DEPTH = 8


def check_inverted(analysis: Analysis):
    graph = analysis.graph
    for rec in analysis.records_of(_SCALINGS):
        if rec.error is not None or len(rec.inputs) != 2 or rec.internal:
            continue
        for kept, stat, x, power in statistics_applied(graph, rec):
            if abs(power - 1.0) > 1e-9 or not scaled_from(graph, kept, x):
                continue
            what = {"var": "standard deviation", "std": "standard deviation"}.get(
                _name(stat.op), "norm" if _name(stat.op) in _SPREADS else "root-mean-square")
            where = f" (the statistic at line {stat.line})" if stat.line not in (None, rec.line) else ""
            message = (f"multiplies {analysis.shape_of(kept)} by its own {what}"
                       f"{where} instead of dividing by it: the result grows with the square of "
                       f"the input's scale, where a normalisation's has unit scale whatever the "
                       f"input's")
            hint = ("Apply the statistic with the power -1: `x * torch.rsqrt(ms + eps)` or "
                    "`x / torch.sqrt(ms + eps)`, not `x / torch.rsqrt(...)` or `x * torch.sqrt(...)`.")
            yield diagnostic("inverted-norm", message, hint, rec=rec)
            break


def statistics_applied(graph, rec):
    """For a product or quotient of two tensors, each ``(the operand scaled, the statistic's
    record, the tensor it measures, the power of that tensor's scale applied)``: a
    normalisation applies -1 (``x * torch.rsqrt(ms + eps)``), an inverted one +1."""
    sign = -1.0 if rec.op in DIVS else 1.0
    sides = ((0, 1), (1, 0)) if sign > 0 else ((0, 1),)  # a divisor is the second operand
    for kept, scaled_by in sides:
        found = _statistic(graph, rec.inputs[scaled_by])
        if found is not None:
            stat, x, power = found
            yield rec.inputs[kept], stat, x, power * sign


def _name(op: str) -> str:
    name = base_name(op)
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _statistic(graph, meta):
    """``(the statistic's record, the tensor it measures, the power of that tensor's scale)``
    for a chain from a statistic of one tensor to ``meta``; None for anything else."""
    power = 1.0
    for _ in range(_DEPTH):
        rec = graph.producer(meta)
        if rec is None or rec.error is not None or not rec.inputs:
            return None
        if len(rec.inputs) != 1:
            return None
        name = _name(rec.op)
        first = rec.inputs[0]
        if name in _SPREADS:
            return rec, first, power * _SPREADS[name]
        if name in _OF_SQUARES:
            x = _squared(graph, first)
            return (rec, x, power * 2.0) if x is not None else None
        if name in _POWERS:
            power *= _POWERS[name]
        elif name == "pow" and _number(rec.args, 1) is not None:
            power *= _number(rec.args, 1)
        elif name in ("__rdiv__", "__rtruediv__"):
            power = -power
        elif name in _KEEPS or rec.op in _SCALINGS and _number(rec.args, 1) is not None:
            pass  # an epsilon added, a clamp, a scaling by a number
        else:
            return None
        meta = first
    return None


def _squared(graph, meta):
    """The tensor ``meta`` is the square of (``x.pow(2)``, ``x * x``, ``x.square()``), or None."""
    rec = graph.producer(meta)
    if rec is None or not rec.inputs:
        return None
    name = _name(rec.op)
    if name == "pow" and len(rec.inputs) == 1 and _number(rec.args, 1) == 2:
        return rec.inputs[0]
    if name == "mul" and len(rec.inputs) == 2 and rec.inputs[0] is rec.inputs[1]:
        return rec.inputs[0]
    if name == "square" and len(rec.inputs) == 1:
        return rec.inputs[0]
    return None


def scaled_from(graph, meta, x, depth: int = 3) -> bool:
    """Whether ``meta`` is ``x``, or ``x`` shifted (less its mean) or scaled (by a learned
    gain) elementwise, a few ops back."""
    if meta is x:
        return True
    rec = graph.producer(meta)
    if depth == 0 or rec is None or _name(rec.op) not in ("sub", "add", "mul", "div"):
        return False
    return any(scaled_from(graph, m, x, depth - 1) for m in rec.inputs)


def _number(args, index: int):
    value = args[index] if len(args) > index else None
    return float(value) if type(value) in (int, float) and not isinstance(value, bool) else None
