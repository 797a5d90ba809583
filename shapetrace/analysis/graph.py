"""The dataflow graph of a trace: who consumes each tensor, and where an axis goes through ops.

Records name their inputs' producers (``meta.src``); this module turns that into the walks the
rules need. Axes are followed by *position*, not by name: the query and the key axis of
attention scores are both called T, and which one is which is only known from the op that made
them (the key axis of ``q @ k.transpose(-2, -1)`` comes from its right operand).

An attention is found from its softmax: forward from the softmax's output, through ops that keep
every value in its place (masking, dropout, casts, transposes, reshapes), to the matmul or
einsum that contracts the weights with the values; backward from the softmax's input to the
matmul or einsum that made the scores. A product whose other operand is matrix algebra on the
same softmax's weights is not a contraction with values: it is an iteration on the matrix
(a Newton-Schulz pseudo-inverse of landmark weights, a power of the weights), and its operand
is not judged as attention weights.

Reads records only (``base.records``) and the op vocabulary (``base.ops``); knows no rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..base.ops import (
    EXPANDS,
    KEEPS_VALUES_IN_PLACE,
    MASKED_FILLS,
    MATMULS,
    RANDOM_FACTORIES,
    RESHAPES,
    WHERES,
    einsum_letters,
    einsum_terms,
    matmul_operands,
    permutation,
    softmax_dim,
)
from ..base.records import OpRecord, TensorMeta

#: Ops followed from a softmax, each way.
DEPTH = 16


# --- positions through ops ------------------------------------------------------------------------

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


def made_through(meta: TensorMeta | None, records: list[OpRecord], passing,
                 depth: int = 8) -> tuple[OpRecord | None, TensorMeta | None]:
    """``meta`` followed back through the ops of ``passing`` (each read by its first input):
    ``(the first op outside them, its output)``; ``(None, the input)`` for a value from outside
    the run; ``(None, None)`` when the walk is cut (``depth`` ops, a record not in ``records``)."""
    for _ in range(depth):
        if meta is None:
            return None, None
        if meta.src is None:
            return None, meta
        if not 0 <= meta.src[0] < len(records):
            return None, None
        made = records[meta.src[0]]
        if made.op not in passing or not made.inputs:
            return made, meta
        meta = made.inputs[0]
    return None, None


def carries(rec: OpRecord, slot: int) -> bool:
    """Whether input ``slot`` of a value-keeping record is an operand whose values it carries
    (not the mask of a ``masked_fill``, not the condition of a ``where``)."""
    op = rec.op
    if op in MASKED_FILLS:
        return slot == 0
    if op in WHERES:
        return slot >= 1 if op == "torch.where" else slot != 1
    return True


def forward_position(rec: OpRecord, slot: int, pos: int) -> int | None:
    """Where axis ``pos`` of input ``slot`` lies in the output, for ops that keep values."""
    if not rec.outputs or rec.error is not None:
        return None
    src, out = rec.inputs[slot], rec.outputs[0]
    op = rec.op
    if op in KEEPS_VALUES_IN_PLACE:
        if not carries(rec, slot):
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
    if op in RESHAPES:
        return reshape_position(src.shape, out.shape, pos)
    if op in EXPANDS:
        lead = out.ndim - src.ndim
        return pos + lead if src.shape[pos] == out.shape[pos + lead] else None
    return None


def backward_positions(rec: OpRecord, pos: int) -> list[tuple[int, int]]:
    """The (input slot, axis) pairs that output axis ``pos`` of a value-keeping op comes from."""
    if not rec.outputs or rec.error is not None:
        return []
    out = rec.outputs[0]
    op = rec.op
    if op in KEEPS_VALUES_IN_PLACE:
        found = []
        for slot, src in enumerate(rec.inputs):
            if not carries(rec, slot):
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
    if op in RESHAPES:
        p = reshape_position(out.shape, src.shape, pos)
        return [] if p is None else [(0, p)]
    if op in EXPANDS:
        p = pos - (out.ndim - src.ndim)
        return [(0, p)] if p >= 0 and src.shape[p] == out.shape[pos] else []
    return []


# --- the roles of axes at products ----------------------------------------------------------------

def contracted_positions(rec: OpRecord, slot: int) -> set[int] | None:
    """The axes of input ``slot`` that a matmul or einsum sums over."""
    meta = rec.inputs[slot]
    if rec.op == "torch.einsum":
        parsed = einsum_terms(rec)
        if parsed is None:
            return None
        terms, rhs = parsed
        letters = einsum_letters(terms[slot], meta.ndim)
        if letters is None:
            return None
        return {i for i, c in enumerate(letters) if c != "." and c not in rhs}
    pair = matmul_operands(rec)
    if pair is None or slot not in pair:
        return None
    if slot == pair[0]:
        return {meta.ndim - 1} if meta.ndim >= 1 else None
    return {meta.ndim - 2} if meta.ndim >= 2 else {0}


def contracted_size(rec: OpRecord) -> int | None:
    """The size of what a q.k product sums over (the head size, for attention scores)."""
    if rec.op == "torch.einsum":
        parsed = einsum_terms(rec)
        if parsed is None or len(rec.inputs) != 2:
            return None
        sizes = [n for n in (_summed_size(rec, s, parsed) for s in (0, 1)) if n]
        return sizes[0] if sizes else None
    pair = matmul_operands(rec)
    if pair is None:
        return None
    a = rec.inputs[pair[0]]
    return a.shape[-1] if a.ndim else None


def _summed_size(rec: OpRecord, slot: int, parsed) -> int | None:
    terms, rhs = parsed
    meta = rec.inputs[slot]
    letters = einsum_letters(terms[slot], meta.ndim)
    if letters is None:
        return None
    return math.prod(meta.shape[i] for i, c in enumerate(letters) if c != "." and c not in rhs)


def output_roles(rec: OpRecord) -> list[str] | None:
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
        left = einsum_letters(terms[0], rec.inputs[0].ndim)
        right = einsum_letters(terms[1], rec.inputs[1].ndim)
        out_letters = einsum_letters(rhs, out.ndim)
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


# --- the graph ------------------------------------------------------------------------------------

@dataclass
class ValueUse:
    """The softmax's weights reaching a matmul: which operand, which axis, through which ops."""

    matmul: OpRecord
    slot: int
    pos: int  # the normalised axis, in the matmul operand's coordinates
    path: list  # records between the softmax and the matmul


@dataclass
class Scores:
    """The product the softmax's input came from."""

    rec: OpRecord
    pos: int  # the normalised axis, in the product's output coordinates
    path: list  # records between the product and the softmax, product side first


@dataclass
class Attention:
    """A softmax whose weights some matmul or einsum contracts, and the scores it normalised."""

    softmax: OpRecord
    dim: int
    implicit: bool  # no dim= given: torch's legacy choice
    uses: list[ValueUse] = field(default_factory=list)
    scores: Scores | None = None


class Graph:
    """Who consumes each recorded tensor, and the walks along the values."""

    def __init__(self, records: list[OpRecord]):
        # Only the records, never the trace: the trace holds its analysis, which holds this.
        self.records = records
        consumers: dict[tuple[int, int], list[tuple[OpRecord, int]]] = {}
        for rec in records:
            slot = 0
            for meta in rec.inputs:
                made_by = meta._made_by  # meta.src, without making the tuple twice
                if made_by is not None:
                    key = (made_by, meta._slot)
                    found = consumers.get(key)
                    if found is None:
                        consumers[key] = [(rec, slot)]
                    else:
                        found.append((rec, slot))
                slot += 1
        self.consumers = consumers

    def producer(self, meta: TensorMeta) -> OpRecord | None:
        made_by = meta._made_by
        return None if made_by is None else self.records[made_by]

    def uses(self, rec: OpRecord, out_slot: int, pos: int) -> list[ValueUse]:
        """The matmuls and einsums that axis ``pos`` of an output reaches, through ops that
        keep values in place."""
        found: list[ValueUse] = []
        self._forward(rec, out_slot, pos, (), found, set())
        return found

    def _forward(self, rec, out_slot, pos, path, found, seen):
        if len(path) > DEPTH or (rec.index, out_slot, pos) in seen:
            return
        seen.add((rec.index, out_slot, pos))
        for consumer, slot in self.consumers.get((rec.index, out_slot), ()):
            if consumer.error is not None:
                continue
            if consumer.op in MATMULS:
                if _mixes_heads(consumer, slot, pos) is None:
                    found.append(ValueUse(consumer, slot, pos, list(path)))
                continue  # weights mixed across heads (talking heads) are no longer normalised
            nxt = forward_position(consumer, slot, pos)
            if nxt is not None:
                self._forward(consumer, 0, nxt, (*path, consumer), found, seen)

    def made_of(self, meta: TensorMeta, index: int) -> bool:
        """Whether ``meta`` is matrix algebra on an output of record ``index``: computed from
        it by elementwise ops, moves and products whose every operand is itself made of it
        (``z @ (13 * I - kz)`` with ``kz = w @ z``). A product with anything else (the
        weights contracted with values, then projected) is a new quantity, not made of it.
        Producers come before their consumers, so the walk stops at records made before it."""
        memo: dict[int, bool] = {}
        start = meta._made_by
        todo = [start] if start is not None and start >= index else []
        while todo:  # post-order without recursion: a chain may be thousands of records long
            i = todo[-1]
            if i in memo:
                todo.pop()
                continue
            rec = self.records[i]
            slots = _product_slots(rec)
            made_by = [rec.inputs[s]._made_by for s in (slots if slots is not None
                                                        else range(len(rec.inputs)))]
            waiting = [j for j in made_by if j is not None and j > index and j not in memo]
            if i != index and waiting:
                todo.extend(waiting)
                continue
            todo.pop()
            found = [j == index or memo.get(j, False) for j in made_by]
            memo[i] = i == index or (all(found) if slots is not None else any(found)) and bool(found)
        return start is not None and memo.get(start, False)

    def scores(self, meta: TensorMeta, pos: int) -> Scores | None:
        """The matmul or einsum that axis ``pos`` of ``meta`` comes from, through ops that keep
        values in place (the scores, for a softmax's input)."""
        return self._backward(meta, pos, (), set())

    def _backward(self, meta, pos, path, seen) -> Scores | None:
        rec = self.producer(meta)
        if rec is None or len(path) > DEPTH or rec.error is not None:
            return None
        if rec.op in MATMULS:
            through = _mixes_heads(rec, None, pos) if meta.src[1] == 0 else None
            if through is None:
                return Scores(rec, pos, list(path)) if meta.src[1] == 0 else None
            slot, p = through  # scores mixed across heads: the scores are further back
            return self._backward(rec.inputs[slot], p, (rec, *path), seen)
        if (rec.index, pos) in seen:
            return None
        seen.add((rec.index, pos))
        for slot, p in backward_positions(rec, pos):
            found = self._backward(rec.inputs[slot], p, (rec, *path), seen)
            if found is not None:
                return found
        return None


def _mixes_heads(rec: OpRecord, slot: int | None, pos: int) -> tuple[int, int] | None:
    """For an einsum that contracts nothing but the head axis (H) of one operand and carries
    axis ``pos`` of it through unchanged (talking-heads attention mixes scores or weights with a
    learned (H, H) matrix), ``(that operand's slot, the axis in the output)`` going forward
    (``slot`` given, ``pos`` in the operand) or ``(slot, the axis in the operand)`` going
    backward (``slot`` None, ``pos`` in the output); else None. Not a q.k product, nor a
    contraction with the values."""
    if rec.op != "torch.einsum" or len(rec.inputs) != 2 or not rec.outputs:
        return None
    parsed = einsum_terms(rec)
    if parsed is None:
        return None
    terms, rhs = parsed
    out = einsum_letters(rhs, rec.outputs[0].ndim)
    for s in ((slot,) if slot is not None else (0, 1)):
        meta = rec.inputs[s]
        letters = einsum_letters(terms[s], meta.ndim)
        if letters is None or out is None or not meta.axes:
            continue
        summed = [i for i, c in enumerate(letters) if c != "." and c not in out]
        if not summed or not all({n for _, n in meta.axes[i]} == {"H"} for i in summed):
            continue
        if slot is not None:
            c = letters[pos]
            if c != "." and c in out:
                return s, out.index(c)
        else:
            c = out[pos]
            if c != "." and c in letters:
                return s, letters.index(c)
    return None


def _product_slots(rec: OpRecord) -> list[int] | None:
    """The multiplied operands of a matmul or einsum; None for any other op."""
    if rec.op not in MATMULS:
        return None
    if rec.op == "torch.einsum":
        return list(range(len(rec.inputs)))
    pair = matmul_operands(rec)
    return list(pair) if pair else []


def _iterates(graph: Graph, use: ValueUse, softmax: int) -> bool:
    """Whether the other operand of ``use.matmul`` (the values, in attention) is made of the
    output of record ``softmax``: weights contracted with something made of themselves."""
    product = use.matmul
    if product.op == "torch.einsum":
        others = [s for s in range(len(product.inputs)) if s != use.slot]
    else:
        pair = matmul_operands(product)
        others = [s for s in (pair or ()) if s != use.slot]
    return any(graph.made_of(product.inputs[s], softmax) for s in others)


def find_attentions(softmaxes: list[OpRecord], graph: Graph) -> list[Attention]:
    """Every softmax (of ``softmaxes``, in trace order) whose output a matmul or einsum
    contracts, with the uses and the scores found."""
    found = []
    for rec in softmaxes:
        if rec.error is not None or not rec.outputs:
            continue
        picked = softmax_dim(rec)
        if picked is None:
            continue
        dim, implicit = picked
        if not 0 <= dim < max(rec.inputs[0].ndim, 1):
            continue
        uses = [u for u in graph.uses(rec, 0, dim) if not _iterates(graph, u, rec.index)]
        att = Attention(rec, dim, implicit, uses)
        if not att.uses:
            continue
        att.scores = graph.scores(rec.inputs[0], dim)
        found.append(att)
    return found


def attention_indices(attentions: list[Attention]) -> tuple:
    """``attentions`` with each record named by its index: what :func:`attentions_at` finds
    again in a run whose records repeat these (``rules.memo``), without the records."""
    def path(recs) -> tuple:
        return tuple(r.index for r in recs)

    return tuple((a.softmax.index, a.dim, a.implicit,
                  tuple((u.matmul.index, u.slot, u.pos, path(u.path)) for u in a.uses),
                  None if a.scores is None else (a.scores.rec.index, a.scores.pos,
                                                  path(a.scores.path)))
                 for a in attentions)


def attentions_at(records: list[OpRecord], indices: tuple) -> list[Attention]:
    """The attentions :func:`attention_indices` describes, in ``records``: those
    :func:`find_attentions` finds there when they repeat the run described (the same ops,
    lines, arguments, producers and shapes)."""
    def path(found) -> list:
        return [records[i] for i in found]

    return [Attention(records[softmax], dim, implicit,
                      [ValueUse(records[m], slot, pos, path(p)) for m, slot, pos, p in uses],
                      None if scores is None else Scores(records[scores[0]], scores[1],
                                                         path(scores[2])))
            for softmax, dim, implicit, uses, scores in indices]


# --- lineage --------------------------------------------------------------------------------------

class Lineage:
    """Where tensors came from, worked out for every record in one pass over the trace (on first
    use of each fact)."""

    def __init__(self, records: list[OpRecord]):
        self.records = records
        self._constant: list[bool] | None = None
        self._batched: list[bool] | None = None

    def constant(self, meta: TensorMeta) -> bool:
        """Built from factories only (arange, ones, full ...), not from inputs, parameters or
        random draws (a script's data)."""
        if meta.src is None:
            return False
        if self._constant is None:
            constant: list[bool] = []
            for rec in self.records:  # producers always come before their consumers
                constant.append(rec.op not in RANDOM_FACTORIES
                                and all(m._made_by is not None and constant[m._made_by]
                                        for m in rec.inputs))
            self._constant = constant
        return self._constant[meta.src[0]]

    def batched(self, meta: TensorMeta) -> bool:
        """Whether the tensor, or anything it was computed from, has a batch axis (named B)."""
        if _has_batch(meta):
            return True
        if meta.src is None:
            return False
        if self._batched is None:
            batched: list[bool] = []
            for rec in self.records:
                batched.append(any(_has_batch(m) or (m._made_by is not None and batched[m._made_by])
                                   for m in rec.inputs))
            self._batched = batched
        return self._batched[meta.src[0]]

    def root(self, meta: TensorMeta, moves) -> tuple[int, int] | TensorMeta:
        """What a tensor was cut or reshaped from, following back through ``moves``: the
        (record, slot) of the op that made it, or the tensor from outside the trace (an input, a
        parameter: described once, so the same object wherever it is read)."""
        while meta.src is not None:
            rec = self.records[meta.src[0]]
            if rec.op not in moves or not rec.inputs:
                return meta.src
            meta = rec.inputs[0]
        return meta


def _has_batch(meta: TensorMeta) -> bool:
    return any(name == "B" for axis in (meta.axes or ()) for _, name in axis)


def made_from(metas, arg, records: list[OpRecord], depth: int = 40) -> bool:
    """Whether one of ``metas`` (an op's operands) was made, op by op, from the input ``arg``
    as it came in."""
    todo, seen = list(metas), set()
    while todo and depth > 0:
        meta = todo.pop()
        if meta.src is None:
            if tuple(meta.shape) == tuple(arg.shape) and meta.dtype == arg.dtype:
                return True
            continue
        if meta.src in seen or not 0 <= meta.src[0] < len(records):
            continue
        seen.add(meta.src)
        depth -= 1
        todo.extend(records[meta.src[0]].inputs)
    return False
