"""silent-broadcast: a broadcast that quietly turns an elementwise op into an outer product.

Broadcasting stretches size-1 (or missing) axes. Stretching *one* operand is the everyday idiom:
a (1, 1, T, T) mask, a (C,) bias, rotary tables, ALiBi slopes. The suspicious case is an
elementwise op where each operand brings an axis the other one lacks *and* those two axes carry
the same name: ``pred (B, 1) - target (B,)`` is (B, B), every prediction against every target.
Tensors built only from constants (``arange[:, None] - arange[None, :]``) and comparisons, which
build masks, are left alone, and so is a product whose two size-1 axes the code put there on
purpose (``mask_a.unsqueeze(2) * mask_b.unsqueeze(-1)``: an all-pairs table asked for).

A matmul is flagged when both operands stretch batch axes, or when one operand's size-1 batch
axis came about by accident (a slice to one element, a keepdim reduction, a factory given a 1)
and meets a real axis: the batch (``att @ v[:1]``, one sample's data for every sample), or an
axis after one both operands share (``(7, 2, 3, 4) @ (7, 1, 4, 5)``: a batch of matrices with
one missing). Legal, and quiet: a size-1 axis put there on purpose (``unsqueeze``, ``None``, a
view), a parameter or constant shared by every sample, a 2-D weight (a missing axis is not a
size-1 axis), and one key/value head met by the query heads (multi-query attention).
"""

from __future__ import annotations

from ..analysis.facts import Analysis
from ..analysis.graph import backward_positions
from ..base.ops import (
    EXPANDS,
    KEEPS_VALUES_IN_PLACE,
    MATMULS,
    PLAIN_MATMULS,
    REDUCTIONS,
    RESHAPES,
    SAME_AXES,
    SIMPLE_MOVES,
    base_name,
    is_arithmetic,
    permutation,
    reduced_axes,
)
from ..base.source import binop_operands
from ..naming.axes import axis_label
from .heads import HeadAxes
from .registry import diagnostic

#: Batched products: the operand shapes of ``torch.mm`` (2-D only) cannot stretch a batch.
BATCHED_MATMULS = PLAIN_MATMULS - {"torch.mm", "Tensor.mm"}


def _aligned(meta, n: int):
    """Right-aligned (size, axis) per output position; missing leading axes are (1, None)."""
    lead = n - meta.ndim
    axes = meta.axes or ((),) * meta.ndim
    return [(1, None) if i < lead else (meta.shape[i - lead], axes[i - lead]) for i in range(n)]


def _elementwise(analysis: Analysis, rec):
    args = rec.args
    if len(args) < 2:
        return None
    x, y = args[0], args[1]
    if not (hasattr(x, "index") and hasattr(y, "index")):
        return None
    out = rec.outputs[0]
    if not out.dtype.is_floating_point:
        return None
    a, b = rec.inputs[x.index], rec.inputs[y.index]
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
    lineage = analysis.lineage
    if lineage.constant(a) and lineage.constant(b):
        return None  # position arithmetic on aranges
    if lineage.root(a, SIMPLE_MOVES) == lineage.root(b, SIMPLE_MOVES):
        return None  # pairs of one tensor with itself: x[:, None] - x[None, :], m[..., None] * m
    if _inserted(analysis, a, pair[1], n) and _inserted(analysis, b, pair[0], n):
        return None  # both size-1 axes put there on purpose: a.unsqueeze(2) * b.unsqueeze(-1)
    if _meets_a_product(analysis, rec):
        return None  # |q| * |k|.T dividing q @ k.T: the all-pairs table a cosine similarity wants
    dims = analysis.dims
    name = axis_label(sa[pair[0]][1], dims)
    left, right = binop_operands(rec.source) or ("the left operand", "the right operand")
    message = (f"{rec.op.split('.')[-1]} of {left} {analysis.shape_of(a)} and {right} "
               f"{analysis.shape_of(b)} broadcasts both to {analysis.shape_of(out)}: each {name} of one "
               f"meets every {name} of the other, an outer product")
    hint = (f"Make the shapes agree if an elementwise op was meant (e.g. squeeze the size-1 axis "
            f"so both are {_one_sided(analysis, a, b)}); ignore this if the all-pairs table is intended.")
    return diagnostic("silent-broadcast", message, hint, rec=rec, axis=name)


def _meets_a_product(analysis: Analysis, rec, hops: int = 3) -> bool:
    """Whether the all-pairs table ``rec`` made is combined, elementwise and within a few ops
    (a ``maximum`` with an epsilon, a clamp), with a table of its very shape that a matrix
    product made (``q @ k.T / (|q| * |k|.T)``): the pairs were meant, each product scaled by
    its own pair."""
    records, out = analysis.records, rec.outputs[0]
    current = [out]
    for later in records[rec.index + 1:rec.index + 1 + 8 * hops]:
        if not any(m is c for m in later.inputs for c in current):
            continue
        if not is_arithmetic(later.op) and base_name(later.op) not in _KEEPS_PAIRS:
            return False
        for m in later.inputs:
            if all(m is not c for c in current) and m.shape == out.shape and m._made_by is not None \
                    and records[m._made_by].op in MATMULS:
                return True
        current = list(later.outputs)
        hops -= 1
        if hops <= 0:
            return False
    return False


#: elementwise ops that keep an all-pairs table a table (a floor, a bound)
_KEEPS_PAIRS = frozenset({"maximum", "clamp", "clamp_min", "clip", "max", "add", "sqrt"})


def _inserted(analysis: Analysis, meta, pos: int, n: int) -> bool:
    """Whether ``meta``'s size-1 axis at output position ``pos`` (of ``n``) is one the code put
    there (``unsqueeze``, ``None``, a view), not a missing axis or one left by a reduction."""
    own = pos - (n - meta.ndim)
    return own >= 0 and _size_one_origin(analysis, meta, own)[0] == "inserted"


def _one_sided(analysis, a, b) -> str:
    """The shape both should have: the operand with the most real axes and no size-1 ones
    (for ``(B, 1) - (B,)`` that is (B,))."""
    def key(m):
        return sum(s > 1 for s in m.shape), -sum(s == 1 for s in m.shape)
    return analysis.shape_of(a if key(a) >= key(b) else b)


def _matmul(analysis: Analysis, rec):
    if len(rec.inputs) < 2:
        return None
    a, b, out = rec.inputs[0], rec.inputs[1], rec.outputs[0]
    if a.ndim < 3 or b.ndim < 3:
        return None  # (T, T) @ (B, T, C): a shared matrix, nothing stretched explicitly
    if a.shape[:-2] == b.shape[:-2]:
        return None  # the same batch axes: nothing stretched, settled before any list is built
    nb = out.ndim - 2
    ba, bb = _aligned_batch(a, nb), _aligned_batch(b, nb)
    stretched_a = [i for i in range(nb) if ba[i][0] == 1 and out.shape[i] > 1]
    stretched_b = [i for i in range(nb) if bb[i][0] == 1 and out.shape[i] > 1]
    if not stretched_a and not stretched_b:
        return None
    dims = analysis.dims
    left, right = binop_operands(rec.source) or ("the left operand", "the right operand")
    if stretched_a and stretched_b:
        message = (f"matmul of {left} {analysis.shape_of(a)} and {right} {analysis.shape_of(b)} stretches "
                   f"batch axes of both operands to {analysis.shape_of(out)}")
        hint = "Give both operands the same leading (batch) axes; broadcast one side at most."
        return diagnostic("silent-broadcast", message, hint, rec=rec)
    walker = None
    for stretched, mine, real, meta, other, text in (
            (stretched_a, ba, bb, a, b, left), (stretched_b, bb, ba, b, a, right)):
        for i in stretched:
            axis = real[i][1]
            if walker is None:
                walker = HeadAxes(analysis)
            if _heads_idiom(axis, walker, other, i - (nb - (other.ndim - 2))):
                continue  # one key/value head against H query heads: multi-query attention
            origin, where = _size_one_origin(analysis, meta, i - (nb - (meta.ndim - 2)))
            if origin not in _ACCIDENTAL:
                continue  # an axis made on purpose (unsqueeze, None, a view), or a parameter
            over_batch = bool(axis) and any(name == "B" for _, name in axis)
            if over_batch and analysis.lineage.batched(meta):
                message = (f"matmul broadcasts {text} {analysis.shape_of(meta)} over the batch: its "
                           f"size-1 axis meets {axis_label(axis, dims)} of the other operand, so one "
                           f"sample's data is used for every sample")
                hint = f"Keep the batch axis of {text} (size {dims['B']}), or index each sample explicitly."
                return diagnostic("silent-broadcast", message, hint, rec=rec)
            shared = [j for j in range(i) if mine[j][0] not in (None, 1) and mine[j][0] == real[j][0]]
            if shared:
                label = axis_label(axis, dims) if axis else str(real[i][0])
                message = (f"matmul of {left} {analysis.shape_of(a)} and {right} {analysis.shape_of(b)}: "
                           f"{text} has size 1 where the other operand has {label} (axis {i} of the "
                           f"batch axes), so its one matrix is reused for each of the {label}; "
                           f"its size-1 axis comes from {where}")
                hint = (f"If {text} should have {label} there, keep that axis where it was lost; if "
                        f"sharing is meant, make it explicit with .expand(...)")
                return diagnostic("silent-broadcast", message, hint, rec=rec)
    return None


#: Where a size-1 batch axis is likely an accident: a keepdim reduction, a slice to one element,
#: or a tensor made that way (``torch.rand(7, 1, 4, 5)``).
_ACCIDENTAL = frozenset({"reduced", "sliced", "made"})


def _heads_idiom(axis, walker, other, pos: int) -> bool:
    """Whether the other operand's axis is a head axis (named H, or cut from a projection's
    features): one key/value head broadcast over the query heads is multi-query attention."""
    if axis and any(name == "H" for _, name in axis):
        return True
    if pos < 0:
        return False
    factors = walker.factors(other, pos)
    return factors is None or any(f.kind == "head" for f in factors)


def _size_one_origin(analysis: Analysis, meta, pos: int) -> tuple[str, str]:
    """How a size-1 axis came about: "inserted" (unsqueeze, None, a view or reshape), "reduced"
    (a keepdim reduction), "sliced" (an index range of one), "made" (a factory), "given" (from
    outside the trace: a parameter or an input), or "other"; and the op's place in words."""
    graph = analysis.graph
    for _ in range(64):
        rec = graph.producer(meta)
        if rec is None:
            return "given", "outside the trace"
        where = f"{rec.op} at line {rec.line}" if rec.line else rec.op
        if rec.error is not None or not rec.inputs:
            return ("made" if not rec.inputs else "other"), where
        if rec.op in RESHAPES or rec.op in EXPANDS:
            return "inserted", where
        reduced = reduced_axes(rec)
        if reduced is not None and base_name(rec.op) in REDUCTIONS:
            src = rec.inputs[0]
            return ("reduced" if src.ndim == meta.ndim and src.shape[pos] > 1 else "other"), where
        if rec.op == "[]":
            src = rec.inputs[0]
            if src.ndim == meta.ndim and src.shape[pos] > 1:
                return "sliced", where
            return ("inserted" if src.ndim < meta.ndim else "other"), where
        perm = permutation(rec)
        if perm is not None:
            meta, pos = rec.inputs[0], perm[pos]
            continue
        steps = backward_positions(rec, pos) if rec.op in KEEPS_VALUES_IN_PLACE else (
            [(0, pos)] if rec.op in SAME_AXES and rec.inputs[0].shape == meta.shape else [])
        steps = [(s, p) for s, p in steps if rec.inputs[s].shape[p] == 1]
        if not steps:
            return "other", where
        meta, pos = rec.inputs[steps[0][0]], steps[0][1]
    return "other", ""


def _aligned_batch(meta, nb: int):
    batch = meta.shape[:-2]
    axes = (meta.axes or ((),) * meta.ndim)[:-2]
    lead = nb - len(batch)
    return [(None, None) if i < lead else (batch[i - lead], axes[i - lead]) for i in range(nb)]


def check_broadcast(analysis: Analysis):
    ops = [op for op in analysis.by_op if op in BATCHED_MATMULS or is_arithmetic(op)]
    for rec in analysis.records_of(ops):
        if rec.error is not None or not rec.outputs or len(rec.inputs) < 2:
            continue
        if rec.op in BATCHED_MATMULS:
            found = _matmul(analysis, rec)
        else:
            found = _elementwise(analysis, rec)
        if found is not None:
            yield found
