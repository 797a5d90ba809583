"""constant-result: an op that makes its value constant, whatever its input.

A softmax (or log-softmax) over an axis of size 1 returns 1 (0) everywhere; a layer norm over a
size-1 axis returns its bias. At the probe sizes every real axis is larger than 1, so a size-1
axis there is one the code made (a keepdim reduction, an unsqueeze, a projection to one score;
at a user's own sizes a size-1 axis may be theirs, one token, and is not judged):
normalising over it is never what the code meant, and the weights or features it produced carry
nothing of the input. A size-1 axis that stands for a named size (a dimension declared as 1, a
top-k of 1) is left alone.

An einsum that repeats an index within one operand takes a diagonal. When that operand holds
scores or attention weights and the repeated index joins its query axis and its key axis (the
two sides of the product that made the scores), each query keeps only its weight for the key at
its own position: the weighted sum over the keys became a diagonal.
"""

from __future__ import annotations

import math

from ..analysis.facts import Analysis
from ..analysis.graph import Graph, backward_positions, output_roles
from ..base.ops import (
    DIVS,
    EINSUMS,
    LOG_SOFTMAXES,
    SOFTMAXES,
    base_name,
    einsum_letters,
    einsum_terms,
    reduced_axes,
)
from .fixes import constructor_of
from .registry import diagnostic

_LAYER_NORMS = frozenset({"F.layer_norm", "torch.layer_norm"})
_COLLAPSING = SOFTMAXES | LOG_SOFTMAXES | _LAYER_NORMS
#: Ops whose size-1 output axis is a count the code chose (``topk(k=1)``), not a slip.
_CHOSEN_SIZE = frozenset({"torch.topk", "Tensor.topk"})


def check_constant(analysis: Analysis):
    if analysis.shapes_only:
        return
    graph = analysis.graph
    for rec in analysis.records_of(_COLLAPSING):
        found = _size_one_axis(analysis, graph, rec)
        if found is not None:
            yield found
    for rec in analysis.records_of(DIVS):
        found = _divided_by_own_sum(analysis, graph, rec)
        if found is not None:
            yield found
    for rec in analysis.records_of(EINSUMS):
        found = _diagonal(analysis, graph, rec)
        if found is not None:
            yield found


def _divided_by_own_sum(analysis: Analysis, graph: Graph, rec):
    """``x / x.sum(dim, keepdim=True)`` over an axis of size 1: every value becomes 1."""
    if rec.error is not None or len(rec.inputs) < 2 or not rec.outputs:
        return None
    total = graph.producer(rec.inputs[1])
    if total is None or base_name(total.op) != "sum" or not total.inputs:
        return None
    if total.inputs[0] is not rec.inputs[0]:
        return None
    return _size_one_axis(analysis, graph, total, shown=rec)


def _size_one_axis(analysis: Analysis, graph: Graph, rec, shown=None):
    if rec.error is not None or not rec.inputs or not rec.outputs:
        return None
    found = reduced_axes(rec)
    if found is None:
        return None
    axes, how = found
    meta = rec.inputs[0]
    if not axes or any(meta.shape[a] != 1 for a in axes) or math.prod(meta.shape) < 2:
        return None
    if analysis.dims.strict:  # the user's own sizes: a size-1 axis may be theirs (one token)
        return None
    if analysis.dims.label(1) != "1" or _chosen(graph, meta, axes[0]) or _one_key(graph, meta, axes):
        return None
    if any(other.site == rec.site and other.inputs and len(other.inputs[0].shape) == len(meta.shape)
           and any(other.inputs[0].shape[a] > 1 for a in axes)
           for other in analysis.records_of((rec.op,)) if other is not rec):
        return None  # the same line runs over more than one element elsewhere (a decode loop)
    shape = analysis.shape_of(meta)
    where = (shown or rec).source or rec.op
    if shown is not None:
        what = "every value it returns is 1, whatever the input, so nothing downstream depends on it"
        fix = "divide by the sum over the axis that holds the alternatives, not the size-1 axis"
    elif rec.op in _LAYER_NORMS:
        what = "its output is the norm's bias whatever the input (each value minus its own mean is 0)"
        fix = "normalise over the feature axis (normalized_shape = the size of the last real axis)"
    else:
        value = "0" if rec.op in LOG_SOFTMAXES else "1"
        what = (f"every weight it returns is {value}, whatever the scores, so nothing downstream "
                f"depends on them")
        fix = ("normalise over the axis that holds the alternatives (dim= the keys or positions "
               "axis), not the size-1 axis")
    axis_text = f"dim={how}" if how is not None else "every axis"
    message = (f"`{where}` normalises {shape} over {axis_text}, an axis of size 1: {what}")
    # a layer that chose its axis when built (``self.softmax = nn.Softmax(dim=2)``): that line
    built = constructor_of(rec) if shown is None and rec.op not in _LAYER_NORMS else None
    made_at = (rec.file, built.lineno) if built is not None and built.lineno != rec.line else None
    return diagnostic("constant-result", message, fix, rec=shown or rec, collapsed="size-1 axis",
                      axis=list(axes), made_at=made_at)


def _one_key(graph: Graph, meta, axes) -> bool:
    """Whether the size-1 axis is the key axis of a product: scores against a single key (the
    first step of a decode loop, one memory slot) are attention over what there is. A key side
    that is a weight of the module (``query @ self.w_g``, ``w_g`` of shape (D, 1)) is no key
    the input brought: a projection to one score, judged."""
    for a in axes:
        scores = graph.scores(meta, a)
        roles = output_roles(scores.rec) if scores is not None else None
        if roles and scores.pos < len(roles) and roles[scores.pos] == "key":
            return not _weight_side(scores.rec)
    return False


def _weight_side(rec) -> bool:
    """Whether the right operand of the product ``rec`` is a tensor from outside the trace
    with one column: a weight vector, not keys."""
    if len(rec.inputs) < 2:
        return False
    other = rec.inputs[1]
    return other.src is None and len(other.shape) == 2 and other.shape[-1] == 1


def _chosen(graph: Graph, meta, pos: int, depth: int = 0) -> bool:
    """Whether the size-1 axis was made by an op told that size (``topk(k=1)``)."""
    rec = graph.producer(meta)
    if rec is None or depth > 8:
        return False
    if rec.op in _CHOSEN_SIZE:
        return True
    return any(_chosen(graph, rec.inputs[slot], p, depth + 1)
               for slot, p in backward_positions(rec, pos))


def _diagonal(analysis: Analysis, graph: Graph, rec):
    if rec.error is not None or not rec.outputs:
        return None
    parsed = einsum_terms(rec)
    if parsed is None:
        return None
    terms, _ = parsed
    for slot, term in enumerate(terms):
        letters = einsum_letters(term, rec.inputs[slot].ndim)
        if letters is None:
            continue
        for c in dict.fromkeys(letters):
            if c == "." or letters.count(c) != 2:
                continue
            first = letters.index(c)
            second = letters.index(c, first + 1)
            meta = rec.inputs[slot]
            if meta.shape[first] == analysis.dims["B"]:
                continue  # sample against sample (in-batch pairs): the diagonal is the positives
            roles = _roles(graph, meta, (first, second))
            if roles is None or set(roles) != {"query", "key"}:
                continue
            shape = analysis.shape_of(meta)
            message = (f"`{rec.source or rec.op}` repeats the index `{c}` in operand {slot + 1} "
                       f"({term!r}, {shape}): it takes the diagonal of the query and key axes, "
                       f"so each query keeps only its score for the key at its own position and "
                       f"the other keys are dropped")
            hint = ("give the key axis its own letter and contract it with the values' position "
                    "letter (e.g. 'bhqk,bkhd->bqhd')")
            return diagnostic("constant-result", message, hint, rec=rec, collapsed="diagonal",
                              operand=slot, index=c)
    return None


def _roles(graph: Graph, meta, positions: tuple[int, int]) -> list[str] | None:
    """The roles (query / key) of two axes of ``meta``, from the product that made them: walked
    back through value-keeping ops and through a softmax (its weights keep its scores' axes)."""
    found = []
    for pos in positions:
        scores = graph.scores(meta, pos)
        if scores is None:
            scores = _through_softmax(graph, meta, pos)
        if scores is None:
            return None
        roles = output_roles(scores.rec)
        if not roles or scores.pos >= len(roles):
            return None
        found.append((scores.rec.index, roles[scores.pos]))
    if len({index for index, _ in found}) != 1:
        return None
    return [role for _, role in found]


def _through_softmax(graph: Graph, meta, pos: int, depth: int = 0):
    rec = graph.producer(meta)
    if rec is None or depth > 8:
        return None
    if rec.op in SOFTMAXES | LOG_SOFTMAXES:
        return graph.scores(rec.inputs[0], pos)
    for slot, p in backward_positions(rec, pos):
        found = _through_softmax(graph, rec.inputs[slot], p, depth + 1)
        if found is not None:
            return found
    return None
