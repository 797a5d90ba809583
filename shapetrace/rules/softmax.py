"""softmax-axis and unnormalized-attention: what the attention weights are normalised over.

The attentions themselves (a softmax, the matmuls that contract its weights with the values,
the product that made its scores) are found by the dataflow graph (``analysis.graph``) and
handed over in ``Analysis.attentions``; these rules judge the softmax's axis against the axis
the values are contracted along, and whether the weights that reach the values sum to one.
attention-scale is ``scale``.
"""

from __future__ import annotations

import math

from ..analysis.facts import Analysis
from ..analysis.graph import (
    Attention,
    Graph,
    ValueUse,
    contracted_positions,
    output_roles,
)
from ..base.ops import (
    CASTS,
    DIVS,
    DROPOUTS,
    EXPANDS,
    PERMUTES,
    RESHAPES,
    SOFTMAXES,
    base_name,
    einsum_letters,
    einsum_terms,
)
from ..base.records import descends_from
from ..naming.axes import axis_label
from .fixes import constructor_of, segment, set_dim, with_fix
from .registry import diagnostic
from .scale import scalar_argument, tracked_slot

#: Ops on the path from a softmax to its matmul that change no value.
_NEUTRAL = CASTS | DROPOUTS | RESHAPES | PERMUTES | EXPANDS


# --- softmax-axis -----------------------------------------------------------------------------

def _name_axis(label: str, role: str | None) -> str:
    if role == "query":
        return f"the queries ({label})"
    if role == "key":
        return f"the keys ({label})"
    return {"H": "the heads (H)", "B": "the batch (B)"}.get(label, f"axis {label}")


def _dim_text(dim: int, n: int) -> str:
    return str(dim - n) if dim >= n - 2 else str(dim)


def _key_dim(graph: Graph, att: Attention) -> int | None:
    """The softmax-input axis that holds the keys of the same scores, if there is one."""
    if att.scores is None:
        return None
    roles = output_roles(att.scores.rec)
    meta = att.softmax.inputs[0]
    for p in range(meta.ndim):
        if p == att.dim:
            continue
        s = graph.scores(meta, p)
        if s is not None and s.rec is att.scores.rec and roles and roles[s.pos] == "key":
            return p
    return None


def _contracted_dim(graph: Graph, att: Attention, use: ValueUse) -> int | None:
    """The softmax axis that ``use.matmul`` actually contracts."""
    want = contracted_positions(use.matmul, use.slot) or set()
    for p in range(att.softmax.outputs[0].ndim):
        for other in graph.uses(att.softmax, 0, p):
            if other.matmul is use.matmul and other.slot == use.slot and other.pos in want:
                return p
    return None


def check_softmax_axis(analysis: Analysis):
    for att in analysis.attentions:
        found = _softmax_axis(analysis, att) or _normalised_over_part(analysis, att)
        if found is not None:
            yield found


def _normalised_over_part(analysis: Analysis, att: Attention):
    """softmax-axis for weights normalised over one axis and contracted with the values over
    more (``k.softmax(-1)`` over y, then ``einsum('ndxy,nexy->nde', k, v)`` over x and y): along
    what is contracted they sum to the size of the other axes, whatever the values. Only axes
    the values share (a true contraction, not a sum of outputs), of sizes above 1, other than
    the batch and the heads, reached through ops that change no value."""
    for use in att.uses:
        rec = use.matmul
        parsed = einsum_terms(rec) if rec.op == "torch.einsum" and len(rec.inputs) == 2 else None
        if parsed is None or any(r.op not in _NEUTRAL or _dropout_active(r) for r in use.path):
            continue
        terms, rhs = parsed
        meta = rec.inputs[use.slot]
        mine = einsum_letters(terms[use.slot], meta.ndim)
        theirs = einsum_letters(terms[1 - use.slot], rec.inputs[1 - use.slot].ndim)
        if mine is None or theirs is None or not 0 <= use.pos < len(mine):
            continue
        extra = [i for i, c in enumerate(mine) if c != "." and c not in rhs and c in theirs
                 and i != use.pos and meta.shape[i] > 1]
        labels = [axis_label(meta.axes[i], analysis.dims) if meta.axes else str(meta.shape[i])
                  for i in extra]
        if mine[use.pos] in rhs or not extra or any(label in ("B", "H") for label in labels):
            continue
        total = math.prod(meta.shape[i] for i in extra)
        label = axis_label(meta.axes[use.pos], analysis.dims) if meta.axes else str(meta.shape[use.pos])
        over = " and ".join(labels)
        message = (f"the softmax at line {att.softmax.line} normalises the weights over {label} "
                   f"only, but the {_product(rec)} at line {rec.line} contracts them with the "
                   f"values over {over} too: along what it contracts they sum to {total}, not 1")
        hint = (f"Normalise over every axis the values are contracted over: flatten {over} and "
                f"{label} into one axis before the softmax, or contract over {label} alone.")
        return diagnostic("softmax-axis", message, hint, rec=att.softmax, expected=None,
                          dim=att.dim, implicit=att.implicit, variant=None)
    return None


def _softmax_axis(analysis: Analysis, att: Attention):
    graph = analysis.graph
    rec = att.softmax
    meta = rec.inputs[0]
    n = meta.ndim
    roles = output_roles(att.scores.rec) if att.scores is not None else None
    role = roles[att.scores.pos] if roles else None
    verdicts = [_sums_to_one(u) or _renormalised(graph, u) is not None for u in att.uses]
    if verdicts and all(verdicts) and not _keys_first(graph, att, role):
        # Every contraction with the values averages them: the weights sum to 1 along the axis
        # contracted (a softmax over that axis, or one renormalised over it afterwards, as Slot
        # Attention and doubly normalised attention do).
        return None
    label = axis_label(meta.axes[att.dim], analysis.dims) if meta.axes else str(meta.shape[att.dim])
    bad = [u for u, ok in zip(att.uses, verdicts)
           if not ok and u.pos not in (contracted_positions(u.matmul, u.slot) or {u.pos})]
    how = f"no dim given, so torch picks dim={att.dim}" if att.implicit else f"dim={rec.arg(1, 'dim')}"
    data = {"dim": att.dim, "implicit": att.implicit}
    if role in ("query", "batch"):
        want = _key_dim(graph, att)
        want_text = f"dim={_dim_text(want, n)}" if want is not None else "the key axis"
        if role == "query" and want is not None and want < att.dim and not att.implicit:
            # the product put the keys before the queries: the layout is the slip, not the dim
            product = att.scores.rec
            message = (f"{_describe_product(product)} puts the keys before the queries, so the "
                       f"softmax at line {rec.line} ({how}) normalises over the queries ({label})")
            hint = ("Put the queries before the keys in the scores (e.g. einsum '...qd,...kd->...qk' "
                    f"or q @ k.transpose(-2, -1)), or softmax over {want_text} and contract that "
                    "axis with the values.")
            swapped = meta.shape[want] == meta.shape[att.dim]
            if swapped:  # self-attention: the weights average the values, the roles are swapped
                message += (", the axis the values are contracted over: the weights still average "
                            "the values, with the operand written first serving as the keys (in "
                            "self-attention a swap of the two projections' roles)")
            return diagnostic("softmax-axis", message, hint, rec=product, expected=want,
                              variant="keys-first" if swapped else None, **data)
        message = (f"softmax over {_name_axis(label, role)} ({how}) of {analysis.shape_of(meta)}: "
                   f"attention weights must sum to 1 over the keys ({want_text})")
        if bad:
            got = _contracted_dim(graph, att, bad[0])
            if got is not None and got == want:
                message += f", the axis the {_product(bad[0].matmul)} at line {bad[0].matmul.line} contracts"
        hint = f"Normalise over the keys: softmax(..., {want_text})."
        if att.implicit:
            hint += " Always pass dim= to softmax."
        fix = _dim_fix(rec, want, n)
        return diagnostic("softmax-axis", message, with_fix(hint, fix), rec=rec, expected=want,
                          fix=fix.data() if fix else None, made_at=_built(rec, fix), **data)
    if not bad:
        return None
    use = bad[0]
    got = _contracted_dim(graph, att, use)
    got_text = f"dim={_dim_text(got, n)}" if got is not None else "another axis"
    if role == "key":
        other = "another axis"
        if got is not None:
            pos = _scores_pos(graph, att, got)
            got_label = axis_label(meta.axes[got], analysis.dims) if meta.axes else str(meta.shape[got])
            other = _name_axis(got_label, roles[pos] if pos is not None else None)
        message = (f"the {_product(use.matmul)} contracts the attention weights over {other} "
                   f"({got_text} of the softmax), but the softmax at line {rec.line} normalised "
                   f"them over the keys ({how})")
        hint = ("Contract the key axis with the values: weights (..., T_q, T_k) @ v (..., T_k, d), "
                "without transposing the weights.")
        return diagnostic("softmax-axis", message, hint, rec=use.matmul, expected=att.dim, **data)
    message = (f"softmax over {_name_axis(label, None)} ({how}) of {analysis.shape_of(meta)}, but the "
               f"{_product(use.matmul)} at line {use.matmul.line} contracts the weights over {got_text}")
    hint = (f"Normalise over the axis that is contracted with the values: softmax(..., {got_text})."
            if got is not None else "Normalise over the axis that is contracted with the values.")
    if att.implicit:
        hint += " Always pass dim= to softmax."
    fix = _dim_fix(rec, got, n)
    return diagnostic("softmax-axis", message, with_fix(hint, fix), rec=rec, expected=got,
                      fix=fix.data() if fix else None, made_at=_built(rec, fix), **data)


def _built(rec, fix) -> tuple[str | None, int] | None:
    """The line that chose the axis of a softmax module (``self.softmax = nn.Softmax(dim=1)``,
    called as ``self.softmax(scores)``): where its fix goes, when that is another line."""
    if not rec.internal or fix is None or fix.line == rec.line:
        return None
    return rec.file, fix.line


def _dim_fix(rec, dim: int | None, n: int):
    """The softmax line with ``dim`` set to the axis it should normalise; for a softmax module
    (``self.softmax = nn.Softmax()``, called as ``self.softmax(scores)``) the line that builds
    it, where its ``dim`` is given."""
    if dim is None:
        return None
    if rec.internal:
        built = constructor_of(rec)
        return set_dim(built, _dim_text(dim, n), method_slot=0, function_slot=0) if built else None
    seg = segment(rec)
    return set_dim(seg, _dim_text(dim, n), method_slot=0, function_slot=1) if seg else None


def _sums_to_one(use: ValueUse) -> bool | None:
    """Whether the weights that ``use.matmul`` contracts with the values sum to 1 along the
    contracted axis (measured by the weight probe); None when not known (no values, several
    contracted axes, training-mode dropout rescaling them)."""
    want = contracted_positions(use.matmul, use.slot)
    if not want or len(want) != 1 or any(_dropout_active(r) for r in use.path):
        return None
    sums = (use.matmul.weight_sums or {}).get(use.slot)
    if sums is None:
        return None
    off = sums.deviations.get(next(iter(want)))
    if off is None or math.isnan(off) or math.isnan(sums.minimum):
        return None
    tol = _tolerance(use.matmul.inputs[use.slot])
    return off <= tol and sums.minimum >= -tol


def _keys_first(graph: Graph, att: Attention, role: str | None) -> bool:
    """An einsum that writes the key axis of its scores before the query axis, normalised and
    contracted over the queries: the weights sum to 1, over the wrong tokens."""
    if role != "query" or att.implicit:
        return False
    want = _key_dim(graph, att)
    return want is not None and want < att.dim


def _scores_pos(graph: Graph, att: Attention, p: int) -> int | None:
    s = graph.scores(att.softmax.inputs[0], p)
    return s.pos if s is not None and s.rec is att.scores.rec else None


def _describe_product(rec) -> str:
    if rec.op == "torch.einsum":
        eq = rec.arg(0, "equation")
        return f"einsum {eq!r}" if isinstance(eq, str) else "einsum"
    return f"the scores product ({rec.source})" if rec.source else "the scores product"


def _product(rec) -> str:
    return "einsum" if rec.op == "torch.einsum" else "matmul"


# --- unnormalized-attention -------------------------------------------------------------------

def _dropout_active(rec) -> bool:
    if rec.op not in DROPOUTS:
        return False
    p = rec.arg(1, "p", 0.5)
    training = rec.arg(2, "training", rec.kwargs.get("train", True))
    try:
        return bool(training) and float(p) > 0
    except (TypeError, ValueError):
        return True


def _tolerance(meta) -> float:
    return 1e-2 if str(meta.dtype) in ("torch.float16", "torch.bfloat16") else 1e-3


def check_unnormalized(analysis: Analysis):
    dims = analysis.dims
    for att in analysis.attentions:
        if att.scores is None:
            continue  # a softmax of features, not of q.k scores: a kernel feature map (linear
            # attention's softmaxed q), whose sums are the model's choice
        for use in att.uses:
            again = _renormalised(analysis.graph, use)
            if again is not None:  # renormalised over the axis contracted: judged there
                found = _renormalised_off(analysis, att, use, *again)
                if found is not None:
                    yield found
                continue
            if use.pos not in (contracted_positions(use.matmul, use.slot) or ()):
                continue  # softmax-axis reports it
            if any(_dropout_active(r) for r in use.path):
                continue  # training-mode dropout rescales the weights on purpose
            if _mixed(analysis.records, att, use):
                continue  # a mixture of attention maps: its sums are the model's choice
            sums = (use.matmul.weight_sums or {}).get(use.slot)
            if sums is None:
                continue
            minimum = sums.minimum
            off = sums.deviations.get(use.pos)
            if off is None:
                continue
            meta = use.matmul.inputs[use.slot]
            tol = _tolerance(meta)
            if math.isnan(off) or math.isnan(minimum) or (off <= tol and minimum >= -tol):
                continue
            culprit = next((r for r in use.path if r.op not in _NEUTRAL), None)
            label = axis_label(meta.axes[use.pos], dims) if meta.axes else str(meta.shape[use.pos])
            line = f"line {att.softmax.line}" if att.softmax.line else "the softmax"
            what = f"off by up to {off:.3g}" if off > tol else f"some are negative ({minimum:.3g})"
            message = (f"attention weights contracted with the values by the {_product(use.matmul)} "
                       f"do not sum to 1 over {label} ({what})")
            if culprit is not None:
                at_line = f" at line {culprit.line}" if culprit.line else ""
                message += f": the {_op_word(culprit)}{at_line}, after the softmax at {line}, changed them"
                target = culprit
            else:
                target = use.matmul
            if culprit is not None and scalar_argument(culprit, tracked_slot(culprit) or 0) is not None:
                hint = "Scale the scores before the softmax, not the weights after it."
            else:
                hint = ("Mask the scores before the softmax (masked_fill with float('-inf')), or "
                        "renormalise the weights: att = att / att.sum(dim=-1, keepdim=True).")
            yield diagnostic("unnormalized-attention", message, hint, rec=target,
                             deviation=off, softmax=att.softmax.index, matmul=use.matmul.index)


def _mixed(records: list, att: Attention, use: ValueUse, hops: int = 7) -> bool:
    """Whether an op between the softmax and the product combines its weights with another
    softmax's (differential attention takes a multiple of a second map from the first; two
    maps averaged): weights made of weights, whose sums the model chose."""
    on_path = {r.index for r in use.path} | {att.softmax.index}
    return any(descends_from(records, meta._made_by, SOFTMAXES, hops, budget=len(records),
                             besides=att.softmax.index)
               for rec in use.path for meta in rec.inputs
               if meta._made_by is not None and meta._made_by not in on_path)


#: reductions a renormalisation divides by
_REDUCTIONS = frozenset({"sum", "mean", "norm", "amax", "max"})


def _renormalised(graph: Graph, use: ValueUse) -> tuple | None:
    """``(division, axis)`` when the weights are divided, between the softmax and the product,
    by a reduction of themselves over an axis the product contracts, kept as size 1 (``attn /
    attn.sum(dim=-1, keepdim=True)``, as Slot Attention renormalises over the inputs after a
    softmax over the slots); None otherwise."""
    contracted = contracted_positions(use.matmul, use.slot) or set()
    if use.pos in contracted:
        return None
    shape = tuple(use.matmul.inputs[use.slot].shape)
    for rec in use.path:
        if rec.op not in DIVS or len(rec.inputs) != 2 or tuple(rec.outputs[0].shape) != shape:
            continue
        reduced = graph.producer(rec.inputs[1])
        if reduced is None or base_name(reduced.op) not in _REDUCTIONS:
            continue
        divisor = tuple(rec.inputs[1].shape)
        kept = [i for i, (a, b) in enumerate(zip(divisor, shape)) if a == 1 and b != 1]
        if len(divisor) == len(shape) and len(kept) == 1 and kept[0] in contracted:
            return rec, kept[0]
    return None


def _renormalised_off(analysis: Analysis, att: Attention, use: ValueUse, division, axis: int):
    """unnormalized-attention at a renormalisation after which the weights still do not sum
    to 1 over the axis the product contracts (divided by their mean, not their sum)."""
    sums = (use.matmul.weight_sums or {}).get(use.slot)
    off = sums.deviations.get(axis) if sums is not None else None
    meta = use.matmul.inputs[use.slot]
    if off is None or math.isnan(off) or off <= _tolerance(meta):
        return None
    label = axis_label(meta.axes[axis], analysis.dims) if meta.axes else str(meta.shape[axis])
    reduced = analysis.graph.producer(division.inputs[1])
    how = base_name(reduced.op)
    at = f" at line {division.line}" if division.line else ""
    message = (f"the attention weights are renormalised over {label}{at} (`{division.source or division.op}`), "
               f"after the softmax at line {att.softmax.line} normalised another axis, yet the "
               f"{_product(use.matmul)} contracts them with sums off 1 by up to {off:.3g}"
               + (f": divided by their {how} over {label}, not their sum" if how != "sum" else ""))
    hint = f"Divide by the sum over that axis: weights / weights.sum(dim={axis - meta.ndim}, keepdim=True)."
    return diagnostic("unnormalized-attention", message, hint, rec=division, deviation=off,
                      softmax=att.softmax.index, matmul=use.matmul.index)


def _op_word(rec) -> str:
    name = rec.op.split(".")[-1]
    return name if name.isidentifier() else f"'{name}'"
