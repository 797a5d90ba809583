"""reshape-jumble: a view/reshape that is not a pure split or merge of adjacent axes."""

from __future__ import annotations

from itertools import permutations

from ..analysis.facts import Analysis
from ..base.dims import Dims
from ..base.ops import SPLIT_MERGES
from ..naming.axes import axis_label, axis_size, fresh_axes
from ..naming.pieces import label_tokens
from ..naming.reshapes import reshape_axes, target_shape
from .fixes import (
    call_parts,
    move_before_call,
    perm_call,
    reorder_call,
    segment,
    with_fix,
    with_receiver,
)
from .registry import diagnostic


def names(axes, dims: Dims) -> list[str]:
    return [axis_label(a, dims) for a in axes]


def call(names_: list[str]) -> str:
    return "(" + ", ".join(names_) + ")"


def fix_plan(src_axes, shape, dims, verb: str) -> tuple[str, str | None, tuple[int, ...] | None]:
    """How to get ``shape`` from ``src_axes`` legally: ``(hint, kind, order)``. ``kind``:
    ``"reorder"`` (a permute alone does it), ``"move"`` (permute by ``order``, then the same
    call), ``"split"`` (the call's sizes in ``order``, then the inverse permute), or None."""
    n, m = len(src_axes), len(shape)
    target = names(fresh_axes(shape, dims), dims)
    if n <= 6:
        # Only orders whose result reads as the names asked for, and of those the one that
        # reads exactly so: from (B, d, T, H) to (B, T, C) the fix is (B, T, H, d), not
        # (B, T, d, H), which merges to d*H. Where two orders read alike and the names do not
        # say which (2*Y: Y*2 or 2*Y?), there is no sure fix.
        legal = []
        for order in permutations(range(n)):
            if order == tuple(range(n)):
                continue
            moved = tuple(src_axes[i] for i in order)
            result = reshape_axes(moved, shape, dims)
            if result.ok:
                got = names(result.axes, dims)
                if _reads_as(got, target, dims):
                    legal.append((got != target, order, moved))
        exact = [item for item in legal if not item[0]]
        numeric = any(part.isdigit() for name in target for part in name.split("*"))
        if legal and not (numeric and len(legal) > 1) and (exact or len(legal) == 1):
            _, order, moved = min(legal, key=lambda item: item[0])
            if tuple(axis_size(a) for a in moved) == tuple(shape):
                return (f"Reorder axes with {perm_call(order)} instead: a {verb} cannot move axes.",
                        "reorder", order)
            return f"Move the axes first: {perm_call(order)}, then .{verb}{call(target)}.", "move", order
    if m <= 6:
        for order in permutations(range(m)):
            if order == tuple(range(m)):
                continue
            split_shape = tuple(shape[i] for i in order)
            result = reshape_axes(src_axes, split_shape, dims)
            split_names = [target[i] for i in order]
            if result.ok and _reads_as(names(result.axes, dims), split_names, dims):
                inverse = tuple(order.index(i) for i in range(m))
                return (f"Split with .{verb}{call(split_names)}, then {perm_call(inverse)}.",
                        "split", order)
    regroup = _regroup_hint(src_axes, shape, dims, verb)
    if regroup is not None:
        return regroup, None, None
    return "Split or merge neighbouring axes only, and move axes with transpose/permute.", None, None


def _reads_as(got: list[str], want: list[str], dims) -> bool:
    """Whether each axis holds the names asked for, in any order (``d*H`` holds C's H and d)."""
    return all(sorted(label_tokens(a, dims)) == sorted(label_tokens(b, dims)) for a, b in zip(got, want))


def _inversions(order) -> int:
    return sum(1 for i in range(len(order)) for j in range(i + 1, len(order)) if order[i] > order[j])


def _regroup_hint(src_axes, shape, dims, verb: str) -> str | None:
    """Axes that hold several factors (windows merged into the batch, ``(B*Y/4*X/4, 4, 4, C)``)
    split apart, moved and merged again: the three steps that undo a windowing."""
    factors = [(f,) for axis in src_axes for f in axis]
    if len(factors) == len(src_axes) or len(factors) > 7:
        return None  # nothing merged to split apart, or too many orders to try
    target = names(fresh_axes(shape, dims), dims)
    best = None
    for order in permutations(range(len(factors))):
        if order == tuple(range(len(factors))):
            continue
        result = reshape_axes(tuple(factors[i] for i in order), shape, dims)
        if result.ok:
            key = (names(result.axes, dims) != target, _inversions(order))
            if best is None or key < best[0]:
                best = (key, order)
    if best is None or best[0][0]:
        return None  # no order reads as the names asked for: say less
    split = names(factors, dims)
    return (f"Split the merged axes apart with .{verb}{call(split)}, then {perm_call(best[1])}, "
            f"then .reshape{call(target)}.")


def fix_hint(src_axes, shape, dims, verb: str) -> str:
    return fix_plan(src_axes, shape, dims, verb)[0]


def _fix_line(rec, kind: str | None, order, verb: str):
    """The user's reshape line, rewritten as the plan says (their own size expressions)."""
    seg = segment(rec) if kind is not None else None
    if seg is None:
        return None
    if kind == "reorder":
        return with_receiver(seg, perm_call(order)) if call_parts(seg) else None
    if kind == "move":
        return move_before_call(seg, order, contiguous=verb == "view")
    inverse = tuple(order.index(i) for i in range(len(order)))
    return reorder_call(seg, order, perm_call(inverse))


def check_jumble(analysis: Analysis):
    dims = analysis.dims
    for rec in analysis.records_of(SPLIT_MERGES):
        result = analysis.reshape(rec)
        if result is None or result.ok or _skew(analysis, rec):
            continue
        src = rec.inputs[0].axes
        shape = target_shape(rec)
        before = call(names(src, dims))
        after = call(names(fresh_axes(shape, dims), dims))
        bad = axis_label(fresh_axes(shape, dims)[result.bad_axis], dims) if result.bad_axis is not None else "?"
        mixed = []
        for f in result.took:
            label = axis_label((f,), dims)
            if label not in mixed:
                mixed.append(label)
        verb = "view" if rec.op.endswith("view") else "reshape"
        what = f"{rec.op.split('.')[-1]} {before} -> {after}"
        mixed = [m for m in mixed if m != bad] or mixed
        message = (f"{what} mixes {' and '.join(mixed)} into {bad}: a {verb} can only split or "
                   f"merge neighbouring axes in their current order")
        hint, kind, order = fix_plan(src, shape, dims, verb)
        fix = _fix_line(rec, kind, order, verb)
        yield diagnostic("reshape-jumble", message, with_fix(hint, fix), rec=rec,
                         before=before, after=after, fix=fix.data() if fix else None)


_PADS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "F.pad"})
#: Factories whose values do not depend on the tensor they are called on (its dtype and device
#: only): ``scores.new_zeros(B, H, T, 1)`` is a column of zeros.
_FILLERS = frozenset({"Tensor.new_zeros", "Tensor.new_ones", "Tensor.new_full", "torch.zeros_like",
                      "torch.ones_like", "torch.full_like"})
_DROPS = frozenset({"[]", "Tensor.narrow", "torch.narrow"})


def _skew(analysis: Analysis, rec) -> bool:
    """The relative-shift trick (Transformer-XL's ``_rel_shift``, Music Transformer's skew,
    Conformer's ``rel_shift``): a (T_q, T_k) grid padded with one column of constants, read
    back as (T_k + 1, T_q) so that row i slides i places along the keys, one row dropped, and
    read back as (T_q, T_k). Both reshapes are recognised by what they compute, whatever the
    names: the first is ``_skew_view``, the second reads back exactly such a skew."""
    return _skew_view(analysis, rec) or _skew_back(analysis, rec)


def _swapped_pair(rec) -> tuple[int, int] | None:
    """The two neighbouring axes a reshape regroups as (a, b) -> (b, a): ``(i, i + 1)`` in its
    input. The axes before the pair may be merged or split on the way (Music Transformer's skew
    reads (B, H, T, T + 1) as (B·H, T + 1, T)), and so may those after it, as long as each side
    holds the same number of elements as before."""
    src, out = rec.inputs[0].shape, rec.outputs[0].shape if rec.outputs else None
    if out is None or len(src) < 2 or len(out) < 2:
        return None
    found = None
    for i in range(len(src) - 1):
        a, b = src[i], src[i + 1]
        if a == b:
            continue
        for k in range(len(out) - 1):
            if (out[k], out[k + 1]) == (b, a) and _product(src[:i]) == _product(out[:k]) \
                    and _product(src[i + 2:]) == _product(out[k + 2:]):
                if found is not None and found != (i, i + 1):
                    return None  # more than one reading
                found = (i, i + 1)
    return found


def _product(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _skew_view(analysis: Analysis, rec) -> bool:
    """A (T_q, T_k) grid padded with one column of constants and read back as (T_k + 1, T_q):
    only two neighbouring axes are regrouped, one of them is the padded one, one longer than
    before, and the other is no longer than the keys."""
    pair = _swapped_pair(rec)
    if pair is None:
        return False
    i, j = pair
    src = rec.inputs[0].shape
    producer = analysis.graph.producer(rec.inputs[0])
    if producer is None or producer.op not in _PADS or not producer.inputs:
        return False
    grid = producer.inputs[0] if producer.op == "F.pad" else max(producer.inputs, key=_numel)
    if grid.ndim != len(src):
        return False
    grown = [p for p in (i, j) if src[p] == grid.shape[p] + 1]
    if len(grown) != 1 or src[i + j - grown[0]] > grid.shape[grown[0]]:
        return False  # a skew slides the queries (no more of them than keys) along the keys
    if producer.op == "F.pad":
        return True
    return all(_constant(analysis, m) for m in producer.inputs if m is not grid)


def _skew_back(analysis: Analysis, rec) -> bool:
    """The skewed grid (T_k + 1, T_q) with one row dropped, read back as (T_q, T_k)."""
    pair = _swapped_pair(rec)
    if pair is None:
        return False
    i, j = pair
    graph = analysis.graph
    drop = graph.producer(rec.inputs[0])
    if drop is None or drop.op not in _DROPS or not drop.inputs:
        return False
    skewed, kept = drop.inputs[0].shape, rec.inputs[0].shape
    if len(skewed) != len(kept) or [p for p in range(len(kept)) if skewed[p] != kept[p]] != [i] \
            or skewed[i] != kept[i] + 1:
        return False
    view = graph.producer(drop.inputs[0])
    return view is not None and view.op in SPLIT_MERGES and _skew_view(analysis, view)


def _constant(analysis: Analysis, meta) -> bool:
    producer = analysis.graph.producer(meta)
    return analysis.lineage.constant(meta) or (producer is not None and producer.op in _FILLERS)


def _numel(meta) -> int:
    n = 1
    for s in meta.shape:
        n *= s
    return n
