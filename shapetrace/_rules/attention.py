"""softmax-axis, attention-scale and unnormalized-attention: attention read out of the trace.

An attention is found from its softmax. Forward from the softmax's output, through ops that keep
every value in its place (masking, dropout, casts, transposes, reshapes), to the matmul or
einsum that contracts the weights with the values; backward from the softmax's input to the
matmul or einsum that made the scores. Axes are followed by *position*, not by name: the query
and the key axis of the scores are both called T, and which one is which is only known from
the op that made them (the key axis of ``q @ k.transpose(-2, -1)`` comes from its right
operand).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .._provenance import _ints, _norm_dim, axis_label, einsum_terms
from .._records import TensorArg
from ._common import at, records_of

SOFTMAXES = {"F.softmax", "Tensor.softmax", "torch.softmax"}
MATMULS = {"@", "Tensor.matmul", "torch.matmul", "torch.bmm", "Tensor.bmm", "torch.mm", "Tensor.mm",
           "torch.baddbmm", "Tensor.baddbmm", "torch.addmm", "Tensor.addmm", "torch.einsum"}
SDPA = "F.scaled_dot_product_attention"
DROPOUTS = {"F.dropout", "torch.dropout", "Tensor.dropout", "F.dropout1d", "F.dropout2d",
            "F.alpha_dropout", "F.feature_alpha_dropout"}

# Ops that keep every element of the followed operand at its position (up to broadcasting).
_MULS = {"Tensor.mul", "torch.mul", "*", "Tensor.mul_", "Tensor.multiply", "torch.multiply"}
_DIVS = {"Tensor.div", "torch.div", "/", "Tensor.div_", "Tensor.true_divide", "torch.true_divide",
         "Tensor.divide", "torch.divide"}
_KEEP = _MULS | _DIVS | DROPOUTS | {
    "Tensor.add", "torch.add", "+", "Tensor.add_", "Tensor.sub", "torch.sub", "-", "Tensor.sub_",
    "Tensor.masked_fill", "Tensor.masked_fill_", "torch.masked_fill", "torch.where", "Tensor.where",
    "Tensor.to", "Tensor.float", "Tensor.half", "Tensor.bfloat16", "Tensor.double", "Tensor.type",
    "Tensor.type_as", "Tensor.contiguous", "Tensor.clone", "torch.clone", "Tensor.detach",
    "torch.nan_to_num", "Tensor.nan_to_num", "Tensor.clamp", "torch.clamp", "Tensor.clamp_",
    "Tensor.clip", "torch.clip", "Tensor.tril", "torch.tril", "Tensor.triu", "torch.triu",
    "Tensor.tril_", "Tensor.triu_",
}
# Ops that only move values around (no arithmetic): followed back from q and k to find a scale.
_MOVES = {"Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.flatten", "torch.flatten",
          "Tensor.unflatten", "torch.unflatten", "Tensor.view_as", "Tensor.reshape_as",
          "Tensor.unsqueeze", "torch.unsqueeze", "Tensor.squeeze", "torch.squeeze",
          "Tensor.expand", "Tensor.expand_as", "Tensor.contiguous", "Tensor.clone", "torch.clone",
          "Tensor.to", "Tensor.float", "Tensor.type", "Tensor.type_as", "Tensor.transpose",
          "torch.transpose", "Tensor.permute", "torch.permute", "Tensor.mT", "Tensor.swapaxes",
          "torch.swapaxes", "Tensor.swapdims", "Tensor.movedim", "torch.movedim",
          "Tensor.repeat_interleave", "torch.repeat_interleave", "Tensor.repeat"} | DROPOUTS
_RESHAPES = {"Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.flatten", "torch.flatten",
             "Tensor.unflatten", "torch.unflatten", "Tensor.view_as", "Tensor.reshape_as",
             "Tensor.unsqueeze", "torch.unsqueeze", "Tensor.squeeze", "torch.squeeze"}
_EXPANDS = {"Tensor.expand", "Tensor.expand_as", "torch.broadcast_to", "Tensor.broadcast_to"}
_PERMUTES = {"Tensor.transpose", "torch.transpose", "Tensor.swapaxes", "torch.swapaxes",
             "Tensor.swapdims", "Tensor.transpose_", "Tensor.T", "Tensor.t", "torch.t", "Tensor.mT",
             "Tensor.permute", "torch.permute", "Tensor.movedim", "torch.movedim", "Tensor.moveaxis"}
# Casts and copies: an op on the path that changes no value.
_NEUTRAL = {"Tensor.to", "Tensor.float", "Tensor.half", "Tensor.bfloat16", "Tensor.double",
            "Tensor.type", "Tensor.type_as", "Tensor.contiguous", "Tensor.clone", "torch.clone",
            "Tensor.detach"} | DROPOUTS | _RESHAPES | _PERMUTES | _EXPANDS

_DEPTH = 16  # ops followed from a softmax, each way


# --- positions through ops --------------------------------------------------------------------

def permutation(rec) -> list[int] | None:
    """For a transpose-like record, ``perm[j]`` = the input axis that output axis j comes from."""
    op = rec.op
    if op not in _PERMUTES or not rec.inputs or not rec.outputs:
        return None
    n = rec.inputs[0].ndim
    perm = list(range(n))
    try:
        if op in ("Tensor.T", "Tensor.t", "torch.t"):
            return perm[::-1]
        if op == "Tensor.mT":
            perm[-1], perm[-2] = perm[-2], perm[-1]
            return perm
        if op in ("Tensor.permute", "torch.permute"):
            order = _ints(rec.args[1:] if len(rec.args) > 1 else (rec.kwargs.get("dims", ()),))
            if order is None or len(order) != n:
                return None
            return [_norm_dim(i, n) for i in order]
        if op in ("Tensor.movedim", "torch.movedim", "Tensor.moveaxis"):
            src, dst = rec.arg(1, "source"), rec.arg(2, "destination")
            src = [src] if isinstance(src, int) else list(src)
            dst = [dst] if isinstance(dst, int) else list(dst)
            src, dst = [_norm_dim(s, n) for s in src], [_norm_dim(d, n) for d in dst]
            order = [None] * n
            for s, d in zip(src, dst):
                order[d] = s
            rest = iter(i for i in range(n) if i not in src)
            return [o if o is not None else next(rest) for o in order]
        a, b = _norm_dim(rec.arg(1, "dim0", 0), n), _norm_dim(rec.arg(2, "dim1", 1), n)
    except (TypeError, ValueError, IndexError, StopIteration):
        return None
    perm[a], perm[b] = perm[b], perm[a]
    return perm


def reshape_position(src_shape, dst_shape, pos: int) -> int | None:
    """Where axis ``pos`` of ``src_shape`` lies after a reshape to ``dst_shape``, if kept whole."""
    size = src_shape[pos]
    if size == 1:
        return None
    before = math.prod(src_shape[:pos])
    acc = 1
    for j, s in enumerate(dst_shape):
        if acc == before and s == size:
            return j
        acc *= s
        if acc > before:
            break
    return None


def _keeps(rec, slot: int) -> bool:
    """Whether input ``slot`` of a _KEEP record is the operand whose values are carried."""
    op = rec.op
    if op in ("Tensor.masked_fill", "Tensor.masked_fill_", "torch.masked_fill"):
        return slot == 0
    if op in ("torch.where", "Tensor.where"):
        return slot >= 1 if op == "torch.where" else slot != 1
    return True


def forward_position(rec, slot: int, pos: int) -> int | None:
    """Where axis ``pos`` of input ``slot`` lies in the output, for ops that keep values."""
    if not rec.outputs or rec.error is not None:
        return None
    src, out = rec.inputs[slot], rec.outputs[0]
    op = rec.op
    if op in _KEEP:
        if not _keeps(rec, slot):
            return None
        lead = out.ndim - src.ndim
        if lead < 0 or src.shape[pos] != out.shape[pos + lead]:
            return None
        return pos + lead
    if slot != 0:
        return None
    perm = permutation(rec)
    if perm is not None:
        return perm.index(pos) if pos in perm else None
    if op in _RESHAPES:
        return reshape_position(src.shape, out.shape, pos)
    if op in _EXPANDS:
        lead = out.ndim - src.ndim
        return pos + lead if src.shape[pos] == out.shape[pos + lead] else None
    return None


def backward_positions(rec, pos: int) -> list[tuple[int, int]]:
    """The (input slot, axis) pairs that output axis ``pos`` of a value-keeping op comes from."""
    if not rec.outputs or rec.error is not None:
        return []
    out = rec.outputs[0]
    op = rec.op
    if op in _KEEP:
        found = []
        for slot, src in enumerate(rec.inputs):
            if not _keeps(rec, slot):
                continue
            p = pos - (out.ndim - src.ndim)
            if p >= 0 and src.shape[p] == out.shape[pos]:
                found.append((slot, p))
        # the operand that has the whole output shape first: scores before a broadcast mask
        found.sort(key=lambda sp: rec.inputs[sp[0]].shape != out.shape)
        return found
    if not rec.inputs:
        return []
    src = rec.inputs[0]
    perm = permutation(rec)
    if perm is not None:
        return [(0, perm[pos])] if pos < len(perm) else []
    if op in _RESHAPES:
        p = reshape_position(out.shape, src.shape, pos)
        return [] if p is None else [(0, p)]
    if op in _EXPANDS:
        p = pos - (out.ndim - src.ndim)
        return [(0, p)] if p >= 0 and src.shape[p] == out.shape[pos] else []
    return []


# --- the roles of axes at matmuls -------------------------------------------------------------

def _letters(term: str, ndim: int) -> list[str] | None:
    """One letter per axis; the axes under ``...`` get ``"."``."""
    if "..." in term:
        head, tail = term.split("...", 1)
        n_ell = ndim - len(head) - len(tail)
        if n_ell < 0:
            return None
        return list(head) + ["."] * n_ell + list(tail)
    return list(term) if len(term) == ndim else None


def matmul_operands(rec) -> tuple[int, int] | None:
    """Input slots of the two multiplied operands."""
    if rec.op in ("torch.addmm", "Tensor.addmm", "torch.baddbmm", "Tensor.baddbmm"):
        return (1, 2) if len(rec.inputs) >= 3 else None
    return (0, 1) if len(rec.inputs) >= 2 else None


def contracted_positions(rec, slot: int) -> set[int] | None:
    """The axes of input ``slot`` that a matmul or einsum sums over."""
    meta = rec.inputs[slot]
    if rec.op == "torch.einsum":
        parsed = einsum_terms(rec)
        if parsed is None:
            return None
        terms, rhs = parsed
        letters = _letters(terms[slot], meta.ndim)
        if letters is None:
            return None
        return {i for i, c in enumerate(letters) if c != "." and c not in rhs}
    pair = matmul_operands(rec)
    if pair is None or slot not in pair:
        return None
    if slot == pair[0]:
        return {meta.ndim - 1} if meta.ndim >= 1 else None
    return {meta.ndim - 2} if meta.ndim >= 2 else {0}


def contracted_size(rec) -> int | None:
    """The size of what a q.k product sums over (the head size, for attention scores)."""
    if rec.op == "torch.einsum":
        parsed = einsum_terms(rec)
        if parsed is None or len(rec.inputs) != 2:
            return None
        sizes = [n for n in (_sum_size(rec, s, parsed) for s in (0, 1)) if n]
        return sizes[0] if sizes else None
    pair = matmul_operands(rec)
    if pair is None:
        return None
    a = rec.inputs[pair[0]]
    return a.shape[-1] if a.ndim else None


def _sum_size(rec, slot, parsed):
    terms, rhs = parsed
    meta = rec.inputs[slot]
    letters = _letters(terms[slot], meta.ndim)
    if letters is None:
        return None
    return math.prod(meta.shape[i] for i, c in enumerate(letters) if c != "." and c not in rhs)


def output_roles(rec) -> list[str] | None:
    """For a two-operand product, each output axis as "query" (from the left operand only),
    "key" (from the right operand only) or "batch" (from both)."""
    out = rec.outputs[0] if rec.outputs else None
    if out is None:
        return None
    if rec.op == "torch.einsum":
        parsed = einsum_terms(rec)
        if parsed is None or len(rec.inputs) != 2:
            return None
        terms, rhs = parsed
        left = _letters(terms[0], rec.inputs[0].ndim)
        right = _letters(terms[1], rec.inputs[1].ndim)
        out_letters = _letters(rhs, out.ndim)
        if left is None or right is None or out_letters is None:
            return None
        roles = []
        for c in out_letters:
            if c == "." or (c in left and c in right):
                roles.append("batch")
            elif c in left:
                roles.append("query")
            else:
                roles.append("key")
        return roles
    pair = matmul_operands(rec)
    if pair is None:
        return None
    a, b = rec.inputs[pair[0]], rec.inputs[pair[1]]
    roles = ["batch"] * out.ndim
    if a.ndim >= 2 and b.ndim >= 2:
        roles[-1], roles[-2] = "key", "query"
    elif b.ndim >= 2 and out.ndim >= 1:
        roles[-1] = "key"
    elif a.ndim >= 2 and out.ndim >= 1:
        roles[-1] = "query"
    return roles


# --- finding attentions -----------------------------------------------------------------------

@dataclass
class ValueUse:
    """The softmax's weights reaching a matmul: which operand, which axis, through which ops."""

    matmul: object
    slot: int
    pos: int  # the normalised axis, in the matmul operand's coordinates
    path: list  # records between the softmax and the matmul


@dataclass
class Scores:
    """The product the softmax's input came from."""

    rec: object
    pos: int  # the normalised axis, in the product's output coordinates
    path: list  # records between the product and the softmax, product side first


@dataclass
class Attention:
    softmax: object
    dim: int
    implicit: bool
    uses: list = field(default_factory=list)
    scores: Scores | None = None


class Graph:
    """Who consumes each recorded tensor."""

    def __init__(self, trace):
        # No reference back to the trace: it keeps the graph in its cache, and a cycle would
        # leave the whole trace for the garbage collector instead of freeing it when dropped.
        self.records = trace.records
        self.consumers: dict[tuple[int, int], list] = {}
        for rec in trace.records:
            for slot, meta in enumerate(rec.inputs):
                if meta.src is not None:
                    self.consumers.setdefault(meta.src, []).append((rec, slot))

    def producer(self, meta):
        return None if meta.src is None else self.records[meta.src[0]]

    def uses(self, rec, out_slot: int, pos: int) -> list[ValueUse]:
        """The matmuls and einsums that axis ``pos`` of an output reaches, through ops that
        keep values in place."""
        found: list[ValueUse] = []
        self._forward(rec, out_slot, pos, (), found, set())
        return found

    def _forward(self, rec, out_slot, pos, path, found, seen):
        if len(path) > _DEPTH or (rec.index, out_slot, pos) in seen:
            return
        seen.add((rec.index, out_slot, pos))
        for consumer, slot in self.consumers.get((rec.index, out_slot), ()):
            if consumer.error is not None:
                continue
            if consumer.op in MATMULS:
                found.append(ValueUse(consumer, slot, pos, list(path)))
                continue
            nxt = forward_position(consumer, slot, pos)
            if nxt is not None:
                self._forward(consumer, 0, nxt, (*path, consumer), found, seen)

    def scores(self, meta, pos: int) -> Scores | None:
        """The matmul or einsum that axis ``pos`` of ``meta`` comes from, through ops that keep
        values in place (the scores, for a softmax's input)."""
        return self._backward(meta, pos, (), set())

    def _backward(self, meta, pos, path, seen) -> Scores | None:
        rec = self.producer(meta)
        if rec is None or len(path) > _DEPTH or rec.error is not None:
            return None
        if rec.op in MATMULS:
            return Scores(rec, pos, list(path)) if meta.src[1] == 0 else None
        if (rec.index, pos) in seen:
            return None
        seen.add((rec.index, pos))
        for slot, p in backward_positions(rec, pos):
            found = self._backward(rec.inputs[slot], p, (rec, *path), seen)
            if found is not None:
                return found
        return None


def softmax_dim(rec) -> tuple[int, bool] | None:
    """The axis a softmax normalises, and whether it was left implicit."""
    if not rec.inputs:
        return None
    n = rec.inputs[0].ndim
    dim = rec.arg(1, "dim")
    if dim is None:
        return (0 if n in (0, 1, 3) else 1), True  # torch's legacy choice
    try:
        return _norm_dim(dim, n), False
    except (TypeError, ValueError):
        return None


def graph_of(trace) -> Graph:
    """The consumer graph of a trace, built once and shared by the attention rules."""
    graph = trace.cache.get("graph")
    if graph is None:
        graph = trace.cache["graph"] = Graph(trace)
    return graph


def attentions(trace, graph: Graph | None = None) -> list[Attention]:
    """Every softmax whose output is contracted by a matmul or einsum (found once per trace and
    shared by the attention rules)."""
    trace._analyse()
    if graph is None or graph is trace.cache.get("graph"):
        found = trace.cache.get("attentions")
        if found is None:
            found = trace.cache["attentions"] = _find_attentions(trace, graph_of(trace))
        return found
    return _find_attentions(trace, graph)


def _find_attentions(trace, graph: Graph) -> list[Attention]:
    found = []
    for rec in records_of(trace, SOFTMAXES):
        if rec.error is not None or not rec.outputs:
            continue
        picked = softmax_dim(rec)
        if picked is None:
            continue
        dim, implicit = picked
        if not 0 <= dim < max(rec.inputs[0].ndim, 1):
            continue
        att = Attention(rec, dim, implicit, graph.uses(rec, 0, dim))
        if not att.uses:
            continue
        att.scores = graph.scores(rec.inputs[0], dim)
        found.append(att)
    return found


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


def check_softmax_axis(trace):
    graph = graph_of(trace)
    for att in attentions(trace, graph):
        found = _softmax_axis(trace, graph, att)
        if found is not None:
            yield found


def _softmax_axis(trace, graph: Graph, att: Attention):
    rec = att.softmax
    meta = rec.inputs[0]
    n = meta.ndim
    label = axis_label(meta.axes[att.dim], trace.dims) if meta.axes else str(meta.shape[att.dim])
    roles = output_roles(att.scores.rec) if att.scores is not None else None
    role = roles[att.scores.pos] if roles else None
    bad = [u for u in att.uses if u.pos not in (contracted_positions(u.matmul, u.slot) or {u.pos})]
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
            return at(trace, product, "softmax-axis", message, hint, expected=want, **data)
        message = (f"softmax over {_name_axis(label, role)} ({how}) of {trace.shape_of(meta)}: "
                   f"attention weights must sum to 1 over the keys ({want_text})")
        if bad:
            got = _contracted_dim(graph, att, bad[0])
            if got is not None and got == want:
                message += f", the axis the {_product(bad[0].matmul)} at line {bad[0].matmul.line} contracts"
        hint = f"Normalise over the keys: softmax(..., {want_text})."
        if att.implicit:
            hint += " Always pass dim= to softmax."
        return at(trace, rec, "softmax-axis", message, hint, expected=want, **data)
    if not bad:
        return None
    use = bad[0]
    got = _contracted_dim(graph, att, use)
    got_text = f"dim={_dim_text(got, n)}" if got is not None else "another axis"
    if role == "key":
        other = "another axis"
        if got is not None:
            pos = _scores_pos(graph, att, got)
            got_label = axis_label(meta.axes[got], trace.dims) if meta.axes else str(meta.shape[got])
            other = _name_axis(got_label, roles[pos] if pos is not None else None)
        message = (f"the {_product(use.matmul)} contracts the attention weights over {other} "
                   f"({got_text} of the softmax), but the softmax at line {rec.line} normalised "
                   f"them over the keys ({how})")
        hint = ("Contract the key axis with the values: weights (..., T_q, T_k) @ v (..., T_k, d), "
                "without transposing the weights.")
        return at(trace, use.matmul, "softmax-axis", message, hint, expected=att.dim, **data)
    message = (f"softmax over {_name_axis(label, None)} ({how}) of {trace.shape_of(meta)}, but the "
               f"{_product(use.matmul)} at line {use.matmul.line} contracts the weights over {got_text}")
    hint = (f"Normalise over the axis that is contracted with the values: softmax(..., {got_text})."
            if got is not None else "Normalise over the axis that is contracted with the values.")
    if att.implicit:
        hint += " Always pass dim= to softmax."
    return at(trace, rec, "softmax-axis", message, hint, expected=got, **data)


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


# --- attention-scale --------------------------------------------------------------------------

def _scalar(rec, slot: int) -> float | None:
    """The number a mul/div record scales its ``slot`` operand by, or None."""
    op = rec.op
    if (op not in _MULS and op not in _DIVS) or len(rec.inputs) > 2:
        return None
    other = None  # (argument position, value)
    for position, a in enumerate(rec.args[:2]):
        if isinstance(a, TensorArg):
            if a.index == slot:
                continue
            m = rec.inputs[a.index]
            if m.value is None or math.prod(m.shape) != 1:
                return None
            other = (position, float(m.value))
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            other = (position, float(a))
    if isinstance(rec.kwargs.get("other"), (int, float)):
        other = (1, float(rec.kwargs["other"]))
    if other is None or other[1] == 0:
        return None
    if op in _DIVS:
        if other[0] != 1 or rec.kwargs.get("rounding_mode"):
            return None  # 1 / x, or an integer division: not a scale
        return 1.0 / other[1]
    return other[1]


@dataclass
class Factor:
    value: float
    rec: object
    where: str  # "scores", "q", "k", "sdpa"
    implicit: bool = False  # scaled_dot_product_attention's default scale


def _operand_factors(graph, meta, where: str, depth: int = 0) -> list[Factor]:
    """Scalars applied to q or k on their way to the product: ``q = q * self.scale``."""
    rec = graph.producer(meta)
    if rec is None or depth > _DEPTH or rec.error is not None or not rec.inputs:
        return []
    slot = 0
    value = _scalar(rec, 0)
    if value is None and len(rec.inputs) == 2:
        value = _scalar(rec, 1)
        slot = 1 if value is not None else 0
    if value is not None:
        return [Factor(value, rec, where)] + _operand_factors(graph, rec.inputs[slot], where, depth + 1)
    if rec.op in _MOVES and meta.src[1] == 0:
        return _operand_factors(graph, rec.inputs[0], where, depth + 1)
    return []


def _dim_names(dims, d: int, d_name: str) -> list[tuple[str, int]]:
    """Named sizes to explain a factor by, the contracted size first."""
    out, seen = [(d_name, d)], {d}
    for name in ("C", "H", "T", "S", "B", "V", "L", *dims):
        size = dims.get(name)
        if size and size > 1 and size not in seen:
            seen.add(size)
            out.append((name, size))
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=2e-3)


def _explain(value: float, dims, d: int, d_name: str) -> str | None:
    for name, n in _dim_names(dims, d, d_name):
        for text, expect in ((f"1/sqrt({name})", n ** -0.5), (f"1/{name}", 1 / n),
                             (f"sqrt({name})", n ** 0.5), (name, float(n))):
            if _close(value, expect):
                return text
    return None


def _judge(trace, factors: list[Factor], d: int, anchor):
    """A diagnostic for the factors applied to one attention's scores, or None when right."""
    dims = trace.dims
    right = d ** -0.5
    total = math.prod(f.value for f in factors)
    if _close(total, right):
        return None
    name = "d" if dims.get("d") == d else dims.label(d)
    size = f"head size {name} = {d}" if name == "d" else (
        f"q·k sums over {d} numbers" if name == str(d) else f"q·k sums over {name} = {d}")
    if _close(total, 1.0):
        if any(not _close(f.value, 1.0) for f in factors):
            return None  # factors that cancel: leave it to the reader
        message = (f"attention scores are not scaled: softmax(q·k) without the 1/sqrt({name}) "
                   f"factor ({size})")
        hint = ("Multiply the scores by 1/math.sqrt(head_size) before the softmax (fine to ignore "
                "if the scale is folded into the weights, as in T5).")
        return at(trace, anchor, "attention-scale", message, hint, variant="unscaled",
                  factor=total, expected=right)
    ones = [f for f in factors if _close(f.value, right)]
    if len(ones) >= 2:
        second = max(ones, key=lambda f: f.rec.index)
        first = min(ones, key=lambda f: f.rec.index)
        message = (f"attention scores scaled twice by 1/sqrt({name}): {_describe(first)} and again "
                   f"{_describe(second)}, so they are divided by {name} in all")
        hint = "Scale once: drop one of the two factors."
        return at(trace, second.rec, "attention-scale", message, hint, factor=total, expected=right)
    explained = _explain(total, dims, d, name)
    if explained is None:
        return None  # a learned temperature or a scale we cannot name: say nothing
    culprit = max((f for f in factors if not _close(f.value, 1.0)), key=lambda f: f.rec.index,
                  default=None)
    target = culprit.rec if culprit is not None else anchor
    message = (f"attention scores scaled by {explained} instead of 1/sqrt({name}) "
               f"(factor {total:.4g}, {size})")
    if explained.startswith("1/sqrt("):
        hint = "Divide by math.sqrt(head_size), the size of the axis q·k sums over, not by sqrt of the model width or of the head count."
    elif explained.startswith("1/"):
        hint = "Divide by math.sqrt(head_size), not by head_size itself."
    else:
        hint = "Divide the scores by math.sqrt(head_size) (multiply by head_size ** -0.5)."
    return at(trace, target, "attention-scale", message, hint, factor=total, expected=right)


def _describe(f: Factor) -> str:
    if f.where == "sdpa":
        where = ("by scaled_dot_product_attention's default scale" if f.implicit
                 else "by scaled_dot_product_attention's scale=")
    else:
        where = {"scores": "on the scores", "q": "on q", "k": "on k"}[f.where]
    line = f" (line {f.rec.line})" if f.rec.line else ""
    return f"{where}{line}"


def _sdpa_scale(rec) -> tuple[float, bool] | None:
    scale = rec.arg(6, "scale")
    if scale is None:
        if not rec.inputs or not rec.inputs[0].shape:
            return None
        return rec.inputs[0].shape[-1] ** -0.5, True
    try:
        return float(scale), False
    except (TypeError, ValueError):
        return None


def check_scale(trace):
    graph = graph_of(trace)
    seen = set()
    for att in attentions(trace, graph):
        scores = att.scores
        if scores is None or scores.rec.index in seen:
            continue
        seen.add(scores.rec.index)
        product = scores.rec
        d = contracted_size(product)
        pair = matmul_operands(product) if product.op != "torch.einsum" else (0, 1)
        if not d or pair is None or len(product.inputs) <= max(pair):
            continue
        factors = []
        for rec in scores.path:
            tracked = _tracked_slot(rec)
            value = _scalar(rec, tracked) if tracked is not None else None
            if value is not None:
                factors.append(Factor(value, rec, "scores"))
        alpha = product.kwargs.get("alpha")
        if isinstance(alpha, (int, float)) and product.op.endswith("baddbmm"):
            factors.append(Factor(float(alpha), product, "scores"))
        factors += _operand_factors(graph, product.inputs[pair[0]], "q")
        factors += _operand_factors(graph, product.inputs[pair[1]], "k")
        found = _judge(trace, factors, d, product)
        if found is not None:
            yield found
    for rec in records_of(trace, (SDPA,)):
        if rec.error is not None or len(rec.inputs) < 3:
            continue
        picked = _sdpa_scale(rec)
        if picked is None:
            continue
        factors = [Factor(picked[0], rec, "sdpa", implicit=picked[1])]
        factors += _operand_factors(graph, rec.inputs[0], "q")
        factors += _operand_factors(graph, rec.inputs[1], "k")
        found = _judge(trace, factors, rec.inputs[0].shape[-1], rec)
        if found is not None:
            yield found


def _tracked_slot(rec) -> int | None:
    """The input slot of a path record that carries the scores (the first full-shape one)."""
    if not rec.inputs or not rec.outputs:
        return None
    for slot, meta in enumerate(rec.inputs):
        if meta.shape == rec.outputs[0].shape and _keeps(rec, slot):
            return slot
    return 0


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


def check_unnormalized(trace):
    graph = graph_of(trace)
    dims = trace.dims
    for att in attentions(trace, graph):
        for use in att.uses:
            if use.pos not in (contracted_positions(use.matmul, use.slot) or ()):
                continue  # softmax-axis reports it
            if any(_dropout_active(r) for r in use.path):
                continue  # training-mode dropout rescales the weights on purpose
            sums = (use.matmul.weight_sums or {}).get(use.slot)
            if sums is None:
                continue
            minimum, deviations = sums
            off = deviations.get(use.pos)
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
            if culprit is not None and _scalar(culprit, _tracked_slot(culprit) or 0) is not None:
                hint = "Scale the scores before the softmax, not the weights after it."
            else:
                hint = ("Mask the scores before the softmax (masked_fill with float('-inf')), or "
                        "renormalise the weights: att = att / att.sum(dim=-1, keepdim=True).")
            yield at(trace, target, "unnormalized-attention", message, hint,
                     deviation=off, softmax=att.softmax.index, matmul=use.matmul.index)


def _op_word(rec) -> str:
    name = rec.op.split(".")[-1]
    return name if name.isidentifier() else f"'{name}'"


CHECKS = {
    "softmax-axis": check_softmax_axis,
    "attention-scale": check_scale,
    "unnormalized-attention": check_unnormalized,
}
