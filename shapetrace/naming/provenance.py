"""Named axes: where each axis of each traced tensor came from.

An axis is a tuple of *factors*, major to minor; a factor is ``(size, name)``. A tensor that
enters the trace from outside gets one factor per axis, named from its size (probe sizes are
distinct primes, so 143 reads as ``C`` and 429 as ``3*C``). Ops then carry factors along:
``view(B, T, H, d)`` splits the single factor ``C`` into ``H`` and ``d``, ``transpose`` moves
axes, ``reshape(B*H, T, d)`` merges the factors ``B`` and ``H`` into one axis. A size-1 axis has
no factors.

The reshape rule follows from this: a reshape is legal exactly when the new axes can be cut from
the old factor sequence, in order, splitting a factor only where its size allows. Ops this module
does not know name their outputs by size alone; it never claims a provenance it did not derive.

A factor cut by size where no names explain the cut (an image height ``Y`` into windows,
``view(B, Y // 4, 4, ...)``; a sequence into chunks) becomes *pieces* tied to the factor they came
from: named relative to it (``Y/4`` and ``4``, never a name that only shares the size, such as
``T`` for a window of 7), and merged back into it when they meet again whole and in order. A
reshape that must cut one such piece to fill an axis already holding pieces of another factor
(windows merged back without their permute) is not a split or merge.
"""

from __future__ import annotations

import math

from ..base.dims import Dims
from ..base.ops import (
    ELEMENTWISE_NAMES,
    REDUCTIONS,
    SAME_AXES,
    einsum_terms,
    einsum_tokens,
    ints,
    movedim_order,
    norm_dim,
)
from ..base.records import TensorArg
from .axes import Axis, axis_size, broadcast_axes, fresh_axes, fresh_axis
from .pieces import cut
from .reshapes import ReshapeCheck, reshape_axes
from .source_names import (
    SHAPED_OPS,
    SPLIT_OPS,
    named_axes,
    named_split,
    source_names,
    split_name,
)

# --- per-op propagation -----------------------------------------------------------------------

def _same(rec, ins, dims):
    return [ins[0]] * len(rec.outputs)


def _reshape(rec, ins, dims, found: dict | None = None):
    out_shape = rec.outputs[0].shape
    if math.prod(out_shape) != math.prod(rec.inputs[0].shape):
        # x.view(torch.uint8) reinterprets the bytes: only the last axis changes size
        if len(out_shape) == len(ins[0]) and out_shape[:-1] == rec.inputs[0].shape[:-1]:
            return [ins[0][:-1] + (fresh_axis(out_shape[-1], dims),)]
        return None
    check = reshape_axes(ins[0], out_shape, dims)
    if found is not None:
        found[rec.index] = check  # reshape_check(rec) would read it again, to the same verdict
    return [check.axes]


def _transpose(rec, ins, dims):
    axes = list(ins[0])
    n = len(axes)
    if n < 2:
        return [tuple(axes)]
    a, b = rec.arg(1, "dim0", 0), rec.arg(2, "dim1", 1)
    a, b = norm_dim(a, n), norm_dim(b, n)
    axes[a], axes[b] = axes[b], axes[a]
    return [tuple(axes)]


def _reverse(rec, ins, dims):
    return [tuple(reversed(ins[0]))]


def _mT(rec, ins, dims):
    axes = list(ins[0])
    if len(axes) >= 2:
        axes[-1], axes[-2] = axes[-2], axes[-1]
    return [tuple(axes)]


def _permute(rec, ins, dims):
    order = rec.args[1:] if len(rec.args) > 1 else (rec.kwargs.get("dims", ()),)
    order = ints(order)
    n = len(ins[0])
    if order is None or len(order) != n:
        return None
    return [tuple(ins[0][norm_dim(i, n)] for i in order)]


def _movedim(rec, ins, dims):
    order = movedim_order(rec.arg(1, "source"), rec.arg(2, "destination"), len(ins[0]))
    return [tuple(ins[0][i] for i in order)]


def _unsqueeze(rec, ins, dims):
    axes = list(ins[0])
    d = rec.arg(1, "dim")
    d = int(d) + len(axes) + 1 if int(d) < 0 else int(d)
    axes.insert(d, ())
    return [tuple(axes)]


def _squeeze(rec, ins, dims):
    axes = ins[0]
    n = len(axes)
    d = rec.arg(1, "dim")
    out_shape = rec.outputs[0].shape
    if d is None:
        kept = tuple(a for a in axes if axis_size(a) != 1)
    else:
        ds = {norm_dim(x, n) for x in ((d,) if isinstance(d, int) else d)}
        kept = tuple(a for i, a in enumerate(axes) if not (i in ds and axis_size(a) == 1))
    return [kept] if len(kept) == len(out_shape) else None


def _expand(rec, ins, dims):
    out_shape = rec.outputs[0].shape
    src = ins[0]
    lead = len(out_shape) - len(src)
    out = []
    for i, size in enumerate(out_shape):
        j = i - lead
        if j >= 0 and axis_size(src[j]) == size:
            out.append(src[j])
        else:
            out.append(fresh_axis(size, dims))
    return [tuple(out)]


def _repeat(rec, ins, dims):
    reps = ints(rec.args[1:]) if len(rec.args) > 1 else ints((rec.kwargs.get("repeats"),))
    if reps is None:
        return None
    src = ins[0]
    lead = len(reps) - len(src)
    out = []
    for i, r in enumerate(reps):
        j = i - lead
        base = src[j] if j >= 0 else ()
        out.append(base if r == 1 else fresh_axis(r, dims) + base)
    return [tuple(out)]


def _repeat_interleave(rec, ins, dims):
    reps, dim = rec.arg(1, "repeats"), rec.arg(2, "dim")
    if not isinstance(reps, int) or dim is None:
        return None
    axes = list(ins[0])
    d = norm_dim(dim, len(axes))
    axes[d] = axes[d] + fresh_axis(reps, dims)
    return [tuple(axes)]


def _getitem(rec, ins, dims):
    index = rec.arg(1)
    if not isinstance(index, tuple):
        index = (index,)
    src = list(ins[0])
    if any(isinstance(i, (TensorArg, list)) for i in index):
        return None
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    out, pos = [], 0
    for item in index:
        if item is None:
            out.append(())
        elif item is Ellipsis:
            k = len(src) - n_real
            out.extend(src[pos:pos + k])
            pos += k
        elif isinstance(item, bool):
            return None
        elif isinstance(item, int):
            pos += 1
        elif isinstance(item, slice):
            if pos >= len(src):
                return None
            size = axis_size(src[pos])
            start, stop, step = item.indices(size)
            new = len(range(start, stop, step))
            out.append(src[pos] if new == size else fresh_axis(new, dims))
            pos += 1
        else:
            return None
    out.extend(src[pos:])
    if len(out) != len(rec.outputs[0].shape):
        return None
    return [tuple(out)]


def _piece_axis(axis: Axis, piece: int, count: int, dims: Dims) -> Axis:
    """The axis of one piece when ``axis`` is cut into ``count`` pieces of ``piece``."""
    if axis_size(axis) == piece:
        return axis
    if len(axis) == 1 and count > 1 and piece > 1:
        return (cut(axis[0], count, dims)[1],)  # one factor, cut as reshape_axes would cut it
    check = reshape_axes((axis,), (count, piece), dims)
    if check.ok and axis_size(check.axes[0]) == count:
        return check.axes[1]
    return fresh_axis(piece, dims)


def _split(rec, ins, dims):
    dim = rec.arg(2, "dim", 0)
    axes = ins[0]
    d = norm_dim(dim, len(axes))
    out = []
    for meta in rec.outputs:
        piece = meta.shape[d]
        count = axis_size(axes[d]) // piece if piece else 0
        new = list(axes)
        new[d] = _piece_axis(axes[d], piece, count, dims) if count * piece == axis_size(axes[d]) \
            else fresh_axis(piece, dims)
        out.append(tuple(new))
    return out


def _unbind(rec, ins, dims):
    d = norm_dim(rec.arg(1, "dim", 0), len(ins[0]))
    axes = ins[0][:d] + ins[0][d + 1:]
    return [axes] * len(rec.outputs)


def _cat(rec, ins, dims):
    if not ins:
        return None
    dim = rec.arg(1, "dim", 0)
    first = ins[0]
    d = norm_dim(dim, len(first))
    parts = [a[d] for a in ins]
    if all(p == parts[0] for p in parts) and len(parts) > 1:
        joined = fresh_axis(len(parts), dims) + parts[0]
    else:
        joined = fresh_axis(rec.outputs[0].shape[d], dims)
    return [first[:d] + (joined,) + first[d + 1:]]


def _stack(rec, ins, dims):
    if not ins:
        return None
    dim = rec.arg(1, "dim", 0)
    first = ins[0]
    d = dim + len(first) + 1 if dim < 0 else dim
    return [first[:d] + (fresh_axis(len(ins), dims),) + first[d:]]


def _elementwise(rec, ins, dims):
    if not ins:
        return None
    if rec.inputs[0].shape == rec.outputs[0].shape:
        # Nothing stretched into the first operand (x + bias, gelu, masked_fill): its axes are
        # the ones broadcast_axes would pick, position by position.
        return [ins[0]] * len(rec.outputs)
    out = broadcast_axes(ins, rec.outputs[0].shape)
    return None if out is None else [out] * len(rec.outputs)


def _matmul(rec, ins, dims):
    if len(ins) < 2:
        return None
    a, b = ins[0], ins[1]
    if rec.op == "torch.addmm" or rec.op == "Tensor.addmm":
        a, b = ins[1], ins[2]
    if rec.op in ("torch.baddbmm", "Tensor.baddbmm"):
        a, b = ins[1], ins[2]
    if len(a) == 0 or len(b) == 0:
        return None
    a1 = len(a) == 1
    b1 = len(b) == 1
    if a1:
        a = ((),) + a
    if b1:
        b = b + ((),)
    batch_shape = rec.outputs[0].shape[: len(rec.outputs[0].shape) - (0 if a1 else 1) - (0 if b1 else 1)]
    batch = broadcast_axes([a[:-2], b[:-2]], batch_shape) if batch_shape else ()
    if batch is None:
        return None
    out = batch + (() if a1 else (a[-2],)) + (() if b1 else (b[-1],))
    return [out]


def _linear(rec, ins, dims):
    out_shape = rec.outputs[0].shape
    return [ins[0][:-1] + (_weight_axis(ins, 0, out_shape[-1], dims),)]


def _embedding(rec, ins, dims):
    out_shape = rec.outputs[0].shape
    return [ins[0] + (_weight_axis(ins, -1, out_shape[-1], dims),)]


def _weight_axis(ins, at: int, size: int, dims) -> Axis:
    """The output features of a linear or embedding: the weight's axis ``at`` (a weight's axes
    are never the batch or the time), else a fresh axis of ``size``."""
    if len(ins) > 1 and ins[1] is not None and len(ins[1]) == 2 and axis_size(ins[1][at]) == size:
        axis = ins[1][at]
        if not all(type(name) is str and name.isdigit() for _, name in axis):
            return axis
    return _no_data_names((fresh_axis(size, dims),))[0]  # a width: 3*C, never T


def _sdpa(rec, ins, dims):
    if len(ins) < 3:
        return None
    q, v = ins[0], ins[2]
    return [q[:-1] + (v[-1],)] + [None] * (len(rec.outputs) - 1)


def _reduce(rec, ins, dims):
    axes = ins[0]
    n = len(axes)
    dim = rec.arg(1, "dim")
    if isinstance(dim, TensorArg):  # torch.max(a, b): elementwise
        return _elementwise(rec, ins, dims)
    keepdim = rec.arg(2, "keepdim", False)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        reduced = set(range(n))
    else:
        ds = (dim,) if isinstance(dim, int) else tuple(dim)
        try:
            reduced = {norm_dim(x, n) for x in ds}
        except (TypeError, ValueError):
            return None
    if keepdim:
        out = tuple(() if i in reduced else a for i, a in enumerate(axes))
    else:
        out = tuple(a for i, a in enumerate(axes) if i not in reduced)
    if len(out) != len(rec.outputs[0].shape):
        return None
    return [out] * len(rec.outputs)


def _einsum(rec, ins, dims):
    parsed = einsum_terms(rec)
    if parsed is None:
        return None
    terms, rhs = parsed
    letter_axis: dict[str, Axis] = {}
    ell: list[tuple] = []
    for term, axes in zip(terms, ins):
        tokens = einsum_tokens(term)
        if "..." in tokens:
            k = tokens.index("...")
            n_ell = len(axes) - (len(tokens) - 1)
            ell.append(tuple(axes[k:k + n_ell]))
            named = tokens[:k] + tokens[k + 1:]
            named_axes = axes[:k] + axes[k + n_ell:]
        else:
            named, named_axes = tokens, axes
        if len(named) != len(named_axes):
            return None
        for letter, axis in zip(named, named_axes):
            if letter not in letter_axis or axis_size(letter_axis[letter]) == 1:
                letter_axis[letter] = axis
    out = []
    for tok in einsum_tokens(rhs):
        if tok == "...":
            if ell:
                width = max(len(e) for e in ell)
                shape = rec.outputs[0].shape[len(out):len(out) + width]
                b = broadcast_axes(list(ell), shape)
                if b is None:
                    return None
                out.extend(b)
        else:
            out.append(letter_axis[tok])
    return [tuple(out)]


def _handler(name: str):
    base = name.rsplit(".", 1)[-1]
    if name in _HANDLERS:
        return _HANDLERS[name]
    if name in SAME_AXES:
        return _elementwise
    if len(name) <= 3 and not name[0].isalpha():  # operators: + - * / ** == ...
        return _HANDLERS.get(name, _elementwise)
    if base in ELEMENTWISE_NAMES:
        return _elementwise
    if base in REDUCTIONS:
        return _reduce
    return None


_HANDLERS = {
    "[]": _getitem, "[]=": _same,
    "@": _matmul, "torch.matmul": _matmul, "Tensor.matmul": _matmul, "torch.bmm": _matmul,
    "Tensor.bmm": _matmul, "torch.mm": _matmul, "Tensor.mm": _matmul, "torch.addmm": _matmul,
    "Tensor.addmm": _matmul, "torch.baddbmm": _matmul, "Tensor.baddbmm": _matmul,
    "torch.einsum": _einsum, "torch.functional.einsum": _einsum,
    "F.linear": _linear, "F.embedding": _embedding,
    "F.scaled_dot_product_attention": _sdpa,
    "Tensor.view": _reshape, "Tensor.reshape": _reshape, "torch.reshape": _reshape,
    "Tensor.view_as": _reshape, "Tensor.reshape_as": _reshape, "Tensor.flatten": _reshape,
    "torch.flatten": _reshape, "Tensor.unflatten": _reshape, "torch.unflatten": _reshape,
    "Tensor.transpose": _transpose, "torch.transpose": _transpose, "Tensor.swapaxes": _transpose,
    "torch.swapaxes": _transpose, "Tensor.swapdims": _transpose, "Tensor.transpose_": _transpose,
    "Tensor.T": _reverse, "Tensor.t": _reverse, "torch.t": _reverse, "Tensor.mT": _mT,
    "Tensor.permute": _permute, "torch.permute": _permute,
    "Tensor.movedim": _movedim, "torch.movedim": _movedim, "Tensor.moveaxis": _movedim,
    "Tensor.unsqueeze": _unsqueeze, "torch.unsqueeze": _unsqueeze, "Tensor.squeeze": _squeeze,
    "torch.squeeze": _squeeze,
    "Tensor.expand": _expand, "Tensor.expand_as": _expand, "torch.broadcast_to": _expand,
    "Tensor.broadcast_to": _expand,
    "Tensor.repeat": _repeat, "Tensor.repeat_interleave": _repeat_interleave,
    "torch.repeat_interleave": _repeat_interleave,
    "Tensor.split": _split, "torch.split": _split, "Tensor.chunk": _split, "torch.chunk": _split,
    "Tensor.tensor_split": _split,
    "Tensor.unbind": _unbind, "torch.unbind": _unbind,
    "torch.cat": _cat, "torch.concat": _cat, "torch.concatenate": _cat, "torch.stack": _stack,
    "torch.where": _elementwise, "Tensor.where": _elementwise, "Tensor.masked_fill": _elementwise,
    "Tensor.masked_fill_": _elementwise,
}


_UNSEEN = object()


def annotate(trace) -> dict[int, ReshapeCheck]:
    """Fill in ``meta.axes`` for every input and output of every record, in order. Returns the
    reshapes read on the way (record index -> ``ReshapeCheck``), which are what
    ``reshape_check`` says of those records."""
    dims = trace.dims
    records = trace.records
    handlers: dict[str, object] = {}  # op name -> handler, looked up once per trace
    fresh: dict[tuple, tuple] = {}  # shape -> size-named axes: parameters come back every layer
    reshapes: dict[int, ReshapeCheck] = {}
    sites: dict = {}  # call site -> the dims its arguments name (``source_names``)
    # the user's own sizes (declared, or named from the model): there a size twice a name's
    # (2*d) is no more than a guess, and no weight's axis is the batch or the time (a 16-wide
    # layer beside 16 tokens): the weights' shapes come from the model (``Trace.weight_shapes``)
    own = dims.strict
    weights = getattr(trace, "weight_shapes", ()) if own else ()

    def fresh_for(shape):
        axes = fresh.get(shape)
        if axes is None:
            axes = fresh_axes(shape, dims)
            axes = fresh[shape] = _plain(axes) if own else axes
        return axes

    for rec in records:
        inputs = rec.inputs
        ins = []
        for meta in inputs:
            axes = meta.axes  # named already: an earlier op's output, or a tensor read before
            if axes is None:
                made_by = meta._made_by
                if made_by is not None:
                    producer = records[made_by].outputs[meta._slot]
                    if producer.shape == meta.shape:
                        axes = producer.axes  # checked against its shape when it was made
                if axes is None:
                    axes = fresh_for(meta.shape)
                    if made_by is None and meta.shape in weights:
                        axes = _no_data_names(axes)
                meta.axes = axes
            ins.append(axes)
        outputs = rec.outputs
        if not outputs:
            continue
        result = None
        op = rec.op
        handler = handlers.get(op, _UNSEEN)
        if handler is _UNSEEN:
            handler = handlers[op] = _handler(op)
        if handler is not None and rec.error is None:
            try:
                if handler is _reshape:
                    result = _reshape(rec, ins, dims, reshapes)
                else:
                    result = handler(rec, ins, dims)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError):
                result = None
        if op in SHAPED_OPS:
            if not result or result[0] is None:
                result = [fresh_for(outputs[0].shape)]
            names = source_names(rec, len(outputs[0].shape), dims, sites)
            if names is not None:  # the code says which axis is which: H = d = 8
                result = [named_axes(result[0], names, dims), *result[1:]]
        if not inputs and own:  # a factory (torch.ones(T, T), arange): as fresh_for
            result = [_plain(fresh_for(meta.shape) if axes is None else axes)
                      for meta, axes in zip(outputs, result or [None] * len(outputs))]
        if result is None:
            for meta in outputs:
                meta.axes = fresh_for(meta.shape)
            continue
        if op in SPLIT_OPS:
            at = split_name(rec, sites)
            if at is not None:  # the code names the pieces' size: x.split(self.n_embd, dim=2)
                result = [None if axes is None else named_split(axes, at, dims) for axes in result]
        # The first operand's axes handed on at its shape (x + bias, gelu, masked_fill) fit as
        # they are; anything else is checked against the output's shape.
        first, first_shape = (ins[0], inputs[0].shape) if ins else (None, None)
        for i, meta in enumerate(outputs):
            axes = result[i] if i < len(result) else None
            if axes is None or not ((axes is first and meta.shape == first_shape)
                                    or _fits(axes, meta.shape)):
                axes = fresh_for(meta.shape)
            meta.axes = axes
    return reshapes


_DATA_NAMES = frozenset(("B", "T", "S"))


def _plain(axes: tuple) -> tuple:
    """``axes`` with every factor named as a multiple of a name (``2*d``) written as its
    number."""
    return tuple(tuple((size, str(size)) if type(name) is str and "*" in name
                       and name.split("*", 1)[0].isdigit() else (size, name)
                       for size, name in axis) for axis in axes)


def _no_data_names(axes: tuple) -> tuple:
    """A weight's axes with any factor named after the batch or the sequence written as its
    number: a weight has neither."""
    return tuple(tuple((size, str(size)) if type(name) is str and
                       _DATA_NAMES & set(name.replace("/", "*").split("*")) else (size, name)
                       for size, name in axis) for axis in axes)


def _fits(axes, shape) -> bool:
    """Whether ``axes`` describe a tensor of ``shape``."""
    if len(axes) != len(shape):
        return False
    for axis, size in zip(axes, shape):
        if (axis[0][0] if len(axis) == 1 else axis_size(axis)) != size:  # most axes are one factor
            return False
    return True
