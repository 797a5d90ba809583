"""silent-broadcast: a broadcast that quietly turns an elementwise op into an outer product.

Broadcasting stretches size-1 (or missing) axes. Stretching *one* operand is the everyday idiom:
a (1, 1, T, T) mask, a (C,) bias, rotary tables, ALiBi slopes. The suspicious case is an
elementwise op where each operand brings an axis the other one lacks *and* those two axes carry
the same name: ``pred (B, 1) - target (B,)`` is (B, B), every prediction against every target.
Tensors built only from constants (``arange[:, None] - arange[None, :]``) and comparisons, which
build masks, are left alone. A matmul is flagged when both operands stretch batch axes, or when
a size-1 batch axis cut from batched data meets the batch (``att @ v[:1]``); a size-1 head axis
(multi-query keys and values) is the legal idiom.
"""

from __future__ import annotations

from .._provenance import axis_label
from .._source import binop_operands
from ._common import at, ops_in, records_of

_OPERATORS = {"+", "-", "*", "/", "**", "%", "//"}
_ARITHMETIC = {"add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide",
               "floor_divide", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "fmod",
               "remainder", "atan2", "arctan2", "hypot", "xlogy", "__rdiv__", "__rsub__",
               "__rpow__", "__rtruediv__", "__rmul__", "__radd__", "__rfloordiv__", "__rmod__"}
_MATMULS = {"@", "Tensor.matmul", "torch.matmul", "torch.bmm", "Tensor.bmm"}


def _is_arithmetic(op: str) -> bool:
    return op in _OPERATORS or op.rsplit(".", 1)[-1] in _ARITHMETIC


class _Lineage:
    """Where tensors came from, worked out for every record in one pass over the trace."""

    def __init__(self, trace):
        self.trace = trace
        self._constant: list[bool] | None = None
        self._batched: list[bool] | None = None

    def constant(self, meta) -> bool:
        """Built from factories only (arange, ones, full ...), not from inputs or parameters."""
        if meta.src is None:
            return False
        if self._constant is None:
            self._constant = []
            for rec in self.trace.records:  # producers always come before their consumers
                self._constant.append(all(m.src is not None and self._constant[m.src[0]]
                                          for m in rec.inputs))
        return self._constant[meta.src[0]]

    def batched(self, meta) -> bool:
        """Whether the tensor, or anything it was computed from, has a batch axis."""
        if self._has_batch(meta):
            return True
        if meta.src is None:
            return False
        if self._batched is None:
            self._batched = []
            for rec in self.trace.records:
                self._batched.append(any(self._has_batch(m) or (m.src is not None and self._batched[m.src[0]])
                                         for m in rec.inputs))
        return self._batched[meta.src[0]]

    def _has_batch(self, meta) -> bool:
        return any(name == "B" for axis in (meta.axes or ()) for _, name in axis)


def _aligned(meta, n: int):
    """Right-aligned (size, axis) per output position; missing leading axes are (1, None)."""
    lead = n - meta.ndim
    axes = meta.axes or ((),) * meta.ndim
    return [(1, None) if i < lead else (meta.shape[i - lead], axes[i - lead]) for i in range(n)]


def _elementwise(trace, rec, lineage):
    if len(rec.args) < 2 or not all(hasattr(a, "index") for a in rec.args[:2]):
        return None
    out = rec.outputs[0]
    if not out.dtype.is_floating_point:
        return None
    a, b = (rec.inputs[arg.index] for arg in rec.args[:2])
    if a.shape == b.shape:
        return None  # nothing stretched: the everyday case, settled before any list is built
    if not (a.dtype.is_floating_point or b.dtype.is_floating_point):
        return None  # index arithmetic
    n = out.ndim
    sa, sb = _aligned(a, n), _aligned(b, n)
    from_a = [i for i in range(n) if sb[i][0] == 1 and sa[i][0] > 1]  # axes only a brings
    from_b = [i for i in range(n) if sa[i][0] == 1 and sb[i][0] > 1]
    if not from_a or not from_b:
        return None
    pair = next(((i, j) for i in from_a for j in from_b if sa[i][1] and sa[i][1] == sb[j][1]), None)
    if pair is None:
        return None  # distinct names: a table such as slopes * distances, or positions * freqs
    if lineage.constant(a) and lineage.constant(b):
        return None  # position arithmetic on aranges
    root = _root(trace, a)
    if root is not None and root == _root(trace, b):
        return None  # pairwise differences of one tensor with itself: x[:, None] - x[None, :]
    dims = trace.dims
    name = axis_label(sa[pair[0]][1], dims)
    left, right = binop_operands(rec.source) or ("the left operand", "the right operand")
    message = (f"{rec.op.split('.')[-1]} of {left} {trace.shape_of(a)} and {right} "
               f"{trace.shape_of(b)} broadcasts both to {trace.shape_of(out)}: each {name} of one "
               f"meets every {name} of the other, an outer product")
    hint = (f"Make the shapes agree if an elementwise op was meant (e.g. squeeze the size-1 axis "
            f"so both are {_one_sided(trace, a, b)}); ignore this if the all-pairs table is intended.")
    return at(trace, rec, "silent-broadcast", message, hint, axis=name)


_MOVES = {"[]", "Tensor.unsqueeze", "torch.unsqueeze", "Tensor.view", "Tensor.reshape",
          "Tensor.expand", "Tensor.transpose", "Tensor.permute", "Tensor.mT", "Tensor.float",
          "Tensor.to", "Tensor.double", "Tensor.contiguous", "Tensor.clone", "Tensor.detach"}


def _root(trace, meta):
    """The (record, slot) a tensor was cut or reshaped from, through ops that only move values."""
    while meta.src is not None:
        rec = trace.records[meta.src[0]]
        if rec.op not in _MOVES or not rec.inputs or rec.inputs[0].src is None:
            return meta.src
        meta = rec.inputs[0]
    return None


def _one_sided(trace, a, b) -> str:
    """The shape both should have: the operand with the most real axes and no size-1 ones
    (for ``(B, 1) - (B,)`` that is (B,))."""
    def key(m):
        return sum(s > 1 for s in m.shape), -sum(s == 1 for s in m.shape)
    return trace.shape_of(a if key(a) >= key(b) else b)


def _matmul(trace, rec, lineage):
    if len(rec.inputs) < 2:
        return None
    a, b, out = rec.inputs[0], rec.inputs[1], rec.outputs[0]
    if a.ndim < 3 or b.ndim < 3:
        return None  # (T, T) @ (B, T, C): a shared matrix, nothing stretched explicitly
    nb = out.ndim - 2
    ba, bb = _aligned_batch(a, nb), _aligned_batch(b, nb)
    stretched_a = [i for i in range(nb) if ba[i][0] == 1 and out.shape[i] > 1]
    stretched_b = [i for i in range(nb) if bb[i][0] == 1 and out.shape[i] > 1]
    if not stretched_a and not stretched_b:
        return None
    dims = trace.dims
    left, right = binop_operands(rec.source) or ("the left operand", "the right operand")
    if stretched_a and stretched_b:
        message = (f"matmul of {left} {trace.shape_of(a)} and {right} {trace.shape_of(b)} stretches "
                   f"batch axes of both operands to {trace.shape_of(out)}")
        hint = "Give both operands the same leading (batch) axes; broadcast one side at most."
        return at(trace, rec, "silent-broadcast", message, hint)
    for stretched, real, meta, text in ((stretched_a, bb, a, left), (stretched_b, ba, b, right)):
        for i in stretched:
            axis = real[i][1]
            if not axis or not any(name == "B" for _, name in axis):
                continue  # e.g. one key/value head against H query heads: multi-query attention
            if not lineage.batched(meta):
                continue  # a parameter or a constant shared by every sample
            message = (f"matmul broadcasts {text} {trace.shape_of(meta)} over the batch: its size-1 "
                       f"axis meets {axis_label(axis, dims)} of the other operand, so one sample's "
                       f"data is used for every sample")
            hint = f"Keep the batch axis of {text} (size {dims['B']}), or index each sample explicitly."
            return at(trace, rec, "silent-broadcast", message, hint)
    return None


def _aligned_batch(meta, nb: int):
    batch = meta.shape[:-2]
    axes = (meta.axes or ((),) * meta.ndim)[:-2]
    lead = nb - len(batch)
    return [(None, None) if i < lead else (batch[i - lead], axes[i - lead]) for i in range(nb)]


def check(trace):
    trace._analyse()
    lineage = _Lineage(trace)
    ops = [op for op in ops_in(trace) if op in _MATMULS or _is_arithmetic(op)]
    for rec in records_of(trace, ops):
        if rec.error is not None or not rec.outputs or len(rec.inputs) < 2:
            continue
        if rec.op in _MATMULS:
            found = _matmul(trace, rec, lineage)
        elif _is_arithmetic(rec.op):
            found = _elementwise(trace, rec, lineage)
        else:
            continue
        if found is not None:
            yield found


CHECKS = {"silent-broadcast": check}
