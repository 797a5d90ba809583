"""head-grouping: grouped-query attention whose key/value heads are repeated in the wrong order.

In grouped-query attention H query heads share Hkv key/value heads in groups of G = H / Hkv:
query heads 0..G-1 use key/value head 0, the next G use head 1, and so on. Every pretrained
checkpoint (Llama, Mistral, Qwen ...) and SDPA's ``enable_gqa=True`` are laid out this way. To
line the key/value heads up with the query heads they must be repeated *in place*
(``repeat_interleave(G, dim=1)``, HF's ``repeat_kv``, einops ``b h t d -> b (h g) t d``);
``k.repeat(1, G, 1, 1)`` tiles them instead (kv0, kv1, kv0, kv1, ...), so query head 1 meets
key/value head 1 where it should meet head 0. Every shape is right and the model trains.

The rule is decided from axis provenance, not from op names: for every product that pairs a
query-side head axis with a key/value-side one (a matmul, an einsum, SDPA), it follows each
operand's head axis back through moves, reshapes and repeats and writes it as factors, major
to minor: a factor cut from a projection's feature axis (a real head index) or a factor made by
a repeat or expand (a copy index). A key/value head axis whose copy index is *major* to its head
index, met by a query head axis with no copy index, pairs the wrong heads. One key/value head
(multi-query attention) has no head index to misplace, so repeat and repeat_interleave agree.
"""

from __future__ import annotations

import ast
import math
import re
from typing import NamedTuple

from ..analysis.facts import Analysis
from ..analysis.graph import backward_positions
from ..base.ops import (
    EINSUMS,
    ELEMENTWISE_NAMES,
    EXPANDS,
    KEEPS_VALUES_IN_PLACE,
    PERMUTES,
    PLAIN_MATMULS,
    RESHAPES,
    SAME_AXES,
    SDPA,
    base_name,
    einsum_letters,
    einsum_terms,
    ints,
    is_arithmetic,
    norm_dim,
    permutation,
)
from ..base.source import call_receiver, source_line
from .registry import diagnostic

#: Steps followed back from a product before giving up (an unknown axis is never flagged).
DEPTH = 48

REPEATS = frozenset({"Tensor.repeat", "torch.tile", "Tensor.tile"})
INTERLEAVES = frozenset({"Tensor.repeat_interleave", "torch.repeat_interleave"})
COMPLEX_VIEWS = frozenset({"torch.view_as_complex", "torch.view_as_real"})
CATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
STACKS = frozenset({"torch.stack"})
#: The ops that make a copy factor (``HeadAxes``): without one, no finding is possible.
_COPIES = EXPANDS | REPEATS | INTERLEAVES | CATS | STACKS


class Factor(NamedTuple):
    kind: str  # "head": cut from a feature axis; "copy": made by a repeat/expand; "other"
    size: int
    rec: object = None  # for a copy: the record that made it
    #: For a head factor: the product of the sizes more major than it in the feature axis it
    #: was cut from (1 for the leading piece): which digits of the head index it carries.
    outer: int = 1


def _terminal(meta, pos: int) -> list[Factor]:
    """An axis whose history is not followed further: a head factor when it is the feature
    (last) axis of its tensor, as a projection's output is."""
    size = meta.shape[pos]
    if size == 1:
        return []
    feature = meta.ndim >= 2 and pos == meta.ndim - 1
    return [Factor("head" if feature else "other", size)]


def _cut(factors: list[Factor], skip: int, take: int) -> list[Factor] | None:
    """The factors of the piece of an axis that lies after the major ``skip`` and spans ``take``."""
    queue = list(factors)
    while skip > 1:
        if not queue:
            return None
        f = queue[0]
        if skip % f.size == 0:
            skip //= f.size
            queue.pop(0)
        elif f.size % skip == 0:
            queue[0] = f._replace(size=f.size // skip, outer=f.outer * skip)
            skip = 1
        else:
            return None
    out = []
    while take > 1:
        if not queue:
            return None
        f = queue.pop(0)
        if take % f.size == 0:
            out.append(f)
            take //= f.size
        elif f.size % take == 0:
            out.append(f._replace(size=take))
            take = 1
        else:
            return None
    return out


class HeadAxes:
    """Follows one axis back through the ops that only move values, as factors."""

    def __init__(self, analysis: Analysis):
        self.graph = analysis.graph
        self.memo: dict = {}

    def factors(self, meta, pos: int, depth: int = 0) -> list[Factor] | None:
        if not 0 <= pos < meta.ndim:
            return None  # an op whose shapes this walk does not understand: say nothing
        if meta.shape[pos] == 1:
            return []
        rec = self.graph.producer(meta)
        if rec is None or depth > DEPTH or rec.error is not None:
            return _terminal(meta, pos)
        key = (meta.src, pos)
        if key not in self.memo:
            self.memo[key] = self._through(rec, meta, pos, depth + 1)
        return self.memo[key]

    def _through(self, rec, meta, pos, depth):
        op = rec.op
        ins = rec.inputs
        size = meta.shape[pos]
        if not ins:
            return _terminal(meta, pos)
        src = ins[0]
        lead = meta.ndim - src.ndim
        if op in PERMUTES:
            perm = permutation(rec)
            return None if perm is None else self.factors(src, perm[pos], depth)
        if op in EXPANDS:
            j = pos - lead
            if j < 0 or src.shape[j] == 1:
                return [Factor("copy", size, rec)]
            return self.factors(src, j, depth)
        if op in REPEATS:
            return self._repeat(rec, src, pos, size, depth)
        if op in INTERLEAVES:
            reps, dim = rec.arg(1, "repeats"), rec.arg(2, "dim")
            if not isinstance(reps, int) or dim is None:
                return None
            if norm_dim(dim, src.ndim) != pos:
                return self.factors(src, pos, depth)
            inner = self.factors(src, pos, depth)
            return None if inner is None else [*inner, Factor("copy", reps, rec)] if reps > 1 else inner
        if op in RESHAPES:
            return self._reshape(src, meta, pos, depth)
        if op == "Tensor.unbind":
            d = norm_dim(rec.arg(1, "dim", 0), src.ndim)
            return self.factors(src, pos if pos < d else pos + 1, depth)
        if base_name(op) in ("chunk", "split", "tensor_split"):
            return self._piece(rec, src, pos, size, depth)
        if op == "[]":
            return self._getitem(rec, src, meta, pos, depth)
        if op in CATS:
            return self._cat(rec, src, pos, depth)
        if op in STACKS:
            return self._stack(rec, pos, depth)
        if op in COMPLEX_VIEWS:  # (..., n, 2) <-> (..., n) complex: the leading axes stay
            return self.factors(src, pos, depth) if pos < min(src.ndim, meta.ndim) - 1 else None
        if op in PLAIN_MATMULS or op == SDPA or op in EINSUMS:
            return self._product(rec, meta, pos, depth)
        if op in KEEPS_VALUES_IN_PLACE or op in SAME_AXES or is_arithmetic(op) \
                or base_name(op) in ELEMENTWISE_NAMES:
            for slot, p in backward_positions(rec, pos) if op in KEEPS_VALUES_IN_PLACE else (
                    [(0, pos)] if src.shape == meta.shape else []):
                return self.factors(ins[slot], p, depth)
        return _terminal(meta, pos)

    def _repeat(self, rec, src, pos, size, depth):
        given = rec.args[1:] if len(rec.args) > 1 else (rec.kwargs.get("repeats",
                                                                        rec.kwargs.get("dims")),)
        reps = ints(given)
        if not reps:
            return None
        n = max(len(reps), src.ndim)
        reps = (1,) * (n - len(reps)) + tuple(reps)
        j = pos - (n - src.ndim)
        r = reps[pos]
        inner = self.factors(src, j, depth) if j >= 0 else []
        if inner is None:
            return None
        return [Factor("copy", r, rec), *inner] if r > 1 else inner

    def _reshape(self, src, meta, pos, depth):
        outer, size = math.prod(meta.shape[:pos]), meta.shape[pos]
        spans = []  # (start, end) of each source axis in the row-major order, as products
        acc = 1
        for s in src.shape:
            spans.append((acc, acc * s))
            acc *= s
        lo, hi = outer, outer * size
        merged = [j for j, (a, b) in enumerate(spans) if src.shape[j] > 1 and a >= lo and b <= hi]
        if merged and spans[merged[0]][0] == lo and spans[merged[-1]][1] == hi:
            out = []
            for j in merged:
                part = self.factors(src, j, depth)
                if part is None:
                    return None
                out.extend(part)
            return out
        for j, (a, b) in enumerate(spans):
            if src.shape[j] > 1 and a <= lo and hi <= b and lo % a == 0 and b % hi == 0:
                whole = self.factors(src, j, depth)
                return None if whole is None else _cut(whole, lo // a, size)
        return None

    def _piece(self, rec, src, pos, size, depth):
        dim = rec.arg(2, "dim", 0)
        if not isinstance(dim, int):
            return None
        if norm_dim(dim, src.ndim) != pos:
            return self.factors(src, pos, depth)
        whole = self.factors(src, pos, depth)
        if whole is None or src.shape[pos] % size:
            return None
        return _cut(whole, src.shape[pos] // size, size)  # the pieces' axis, from the minor end

    def _cat(self, rec, src, pos, depth):
        """``torch.cat([k] * G, dim=1)`` tiles like ``repeat``. Along the other axes a
        concatenation is followed into its last traced piece (a KV cache appends the new keys
        last; a legacy empty ``(0,)`` piece is skipped)."""
        dim = rec.arg(1, "dim", 0)
        n = rec.outputs[0].ndim
        ins = [m for m in rec.inputs if m.ndim == n]
        if not isinstance(dim, int) or not ins or any(m.ndim != n and m.shape != (0,)
                                                      for m in rec.inputs):
            return None
        if norm_dim(dim, n) != pos:
            traced = [m for m in ins if m.src is not None] or ins
            return self.factors(traced[-1], pos, depth)
        first = ins[0]
        if len(ins) > 1 and first.src is not None and all(m.src == first.src for m in ins):
            inner = self.factors(first, pos, depth)
            return None if inner is None else [Factor("copy", len(ins), rec), *inner]
        if len(ins) == 1:
            return self.factors(first, pos, depth)
        return None

    def _stack(self, rec, pos, depth):
        """``torch.stack([k] * G, dim)``: copies of one tensor, the new axis their copy index
        and the other axes that tensor's. Different tensors stacked (q, k and v) are not
        followed: which one a later index picks is not known here."""
        dim, n = rec.arg(1, "dim", 0), rec.outputs[0].ndim
        ins = rec.inputs
        if not isinstance(dim, int) or not ins or ins[0].src is None \
                or any(m.src != ins[0].src for m in ins):
            return None
        dim = norm_dim(dim, n)
        if pos != dim:
            return self.factors(ins[0], pos if pos < dim else pos - 1, depth)
        return [Factor("copy", len(ins), rec)] if len(ins) > 1 else []

    def _getitem(self, rec, src, meta, pos, depth):
        index = rec.arg(1)
        if not isinstance(index, tuple):
            index = (index,)
        n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
        out_pos, j = 0, 0
        for item in index:
            if item is None:
                if out_pos == pos:
                    return []
                out_pos += 1
            elif item is Ellipsis:
                k = src.ndim - n_real
                if out_pos <= pos < out_pos + k:
                    return self.factors(src, j + pos - out_pos, depth)
                out_pos, j = out_pos + k, j + k
            elif isinstance(item, int) and not isinstance(item, bool):
                j += 1
            elif isinstance(item, slice):
                if out_pos == pos:
                    full = item == slice(None)
                    return self.factors(src, j, depth) if full else _terminal(meta, pos)
                out_pos, j = out_pos + 1, j + 1
            else:
                return None
        j += pos - out_pos
        return self.factors(src, j, depth) if 0 <= j < src.ndim else None

    def _product(self, rec, meta, pos, depth):
        """An output batch axis of a product, followed into the operand that brings it."""
        for slot, p in product_axes(rec, pos):
            if rec.inputs[slot].shape[p] == meta.shape[pos]:
                return self.factors(rec.inputs[slot], p, depth)
        return _terminal(meta, pos)


def product_axes(rec, pos: int) -> list[tuple[int, int]]:
    """The (operand slot, axis) pairs that output batch axis ``pos`` of a product comes from."""
    out = rec.outputs[0]
    if rec.op in EINSUMS:
        parsed = einsum_terms(rec)
        if parsed is None:
            return []
        terms, rhs = parsed
        out_letters = einsum_letters(rhs, out.ndim)
        if out_letters is None or pos >= len(out_letters):
            return []
        found = []
        for slot, term in enumerate(terms[:len(rec.inputs)]):
            letters = einsum_letters(term, rec.inputs[slot].ndim)
            if letters and out_letters[pos] != "." and out_letters[pos] in letters:
                found.append((slot, letters.index(out_letters[pos])))
        return found
    if pos >= out.ndim - 2:
        return []
    slots = (0, 1, 2) if rec.op == SDPA else (0, 1)
    found = []
    for slot in slots:
        if slot < len(rec.inputs):
            meta = rec.inputs[slot]
            p = pos - (out.ndim - meta.ndim)
            if 0 <= p < meta.ndim - 2:
                found.append((slot, p))
    return found


def _pairs(rec):
    """(query-side slot, key/value-side slot, query axis, key/value axis) for the head axes a
    product pairs: every batch axis two operands share."""
    if rec.op in EINSUMS:
        parsed = einsum_terms(rec)
        if parsed is None or len(rec.inputs) != 2:
            return
        terms, rhs = parsed
        left = einsum_letters(terms[0], rec.inputs[0].ndim)
        right = einsum_letters(terms[1], rec.inputs[1].ndim)
        if left is None or right is None:
            return
        for i, c in enumerate(left):
            if c != "." and c in right and c in rhs:
                yield 0, 1, i, right.index(c)
        return
    out = rec.outputs[0]
    kv_slots = (1, 2) if rec.op == SDPA else (1,)
    for pos in range(out.ndim - 2):
        q = rec.inputs[0]
        pq = pos - (out.ndim - q.ndim)
        for slot in kv_slots:
            if slot >= len(rec.inputs):
                continue
            kv = rec.inputs[slot]
            pk = pos - (out.ndim - kv.ndim)
            if 0 <= pq < q.ndim - 2 and 0 <= pk < kv.ndim - 2:
                yield 0, slot, pq, pk


def _refine(left: list[Factor], right: list[Factor]) -> list[tuple[Factor, Factor]] | None:
    """The two factor lists of one axis cut into common pieces, paired, major to minor."""
    a, b = [f for f in left if f.size > 1], [f for f in right if f.size > 1]
    pairs = []
    while a and b:
        x, y = a.pop(0), b.pop(0)
        if x.size != y.size:
            small, big, rest = (x, y, b) if y.size % x.size == 0 else (y, x, a)
            if big.size % small.size:
                return None
            rest.insert(0, big._replace(size=big.size // small.size, outer=big.outer * small.size))
            big = big._replace(size=small.size)
            x, y = (small, big) if small is x else (big, small)
        pairs.append((x, y))
    return None if a or b else pairs


def _wrong_copy(kv: list[Factor], query: list[Factor]) -> Factor | None:
    """The copy factor that makes a key/value head axis meet the wrong query heads, if any.

    Query head j of a group layout uses key/value head j // G: the key/value head index must
    sit on the *major* digits of the query head index it meets. ``kv`` holds copies and head
    factors; ``query`` only head (and other) factors."""
    copies = [f for f in kv if f.kind == "copy" and f.size > 1]
    if not copies or not any(f.kind == "head" and f.size > 1 for f in kv):
        return None
    pairs = _refine(kv, query)
    if pairs is None:
        return None
    heads = [q for _, q in pairs if q.kind == "head"]
    if not heads:
        return None
    expected = min(q.outer for q in heads)
    for k, q in pairs:
        if k.kind != "head":
            continue
        if q.kind != "head" or q.outer != expected:
            before = [f for f in kv[:kv.index(k)] if f.kind == "copy" and f.size > 1] if k in kv else []
            return (before or copies)[0]
        expected *= k.size
    return None


def check_grouping(analysis: Analysis):
    if not any(op in _COPIES for op in analysis.by_op):
        return  # no op that makes a copy factor ran: no head axis can be tiled
    ops = [op for op in analysis.by_op if op in PLAIN_MATMULS or op == SDPA or op in EINSUMS]
    walker = HeadAxes(analysis)
    reported = set()
    for rec in analysis.records_of(ops):
        if rec.error is not None or not rec.outputs or len(rec.inputs) < 2:
            continue
        for a_slot, b_slot, pa, pb in _pairs(rec):
            a, b = rec.inputs[a_slot], rec.inputs[b_slot]
            if a.shape[pa] != b.shape[pb] or a.shape[pa] <= 1:
                continue
            fa, fb = walker.factors(a, pa), walker.factors(b, pb)
            if fa is None or fb is None:
                continue
            for side, other in ((fb, fa), (fa, fb)):
                if any(f.kind == "copy" and f.size > 1 for f in other):
                    continue  # both sides copied: compared where the copies were made, if at all
                copy = _wrong_copy(side, other)
                if copy is None or copy.rec.index in reported:
                    continue
                reported.add(copy.rec.index)
                yield _finding(analysis, copy.rec, side, copy)


def _finding(analysis: Analysis, rep, factors: list[Factor], copy: Factor):
    heads = math.prod(f.size for f in factors if f.kind == "head" and f.size > 1)
    groups = copy.size
    what = call_receiver(rep.source) or "the key/value tensor"
    listed = re.fullmatch(r"\[\s*([\w.]+)\s*\]\s*\*.*", what)  # torch.cat([k] * G, ...)
    what = listed.group(1) if listed else what
    order = ", ".join(f"kv{i % heads}" for i in range(min(heads * 2, 6))) + ", ..."
    message = (f"{what} is repeated as whole blocks: its {heads} key/value heads come out as "
               f"{order}, so query head 1 meets key/value head 1; in grouped-query attention query "
               f"heads 0..{groups - 1} share key/value head 0 (the layout of every pretrained "
               f"checkpoint and of SDPA's enable_gqa=True)")
    fix = _fixed_line(rep, groups, heads)
    if fix is not None:
        hint = f"Repeat each key/value head in place: {fix[0]}  {fix[1]}"
    elif rep.inputs and heads not in rep.inputs[0].shape:  # copied before the heads were split
        hint = (f"Repeat each key/value head in place: split the {heads} heads off the flat axis "
                f"first (a .view that gives them an axis of their own), then "
                f".repeat_interleave({groups}, dim=...) on that axis, or "
                f"[:, :, None].expand(...).reshape(...) as Llama's repeat_kv")
    else:
        hint = (f"Repeat each key/value head in place: .repeat_interleave({groups}, dim=...) on "
                f"the head axis, or [:, :, None].expand(...).reshape(...) as Llama's repeat_kv")
    return diagnostic("head-grouping", message, hint, rec=rep, heads=heads, groups=groups)


def _fixed_line(rep, groups: int, heads: int) -> tuple[int, str] | None:
    """The user's line with the tiling call rewritten to repeat in place, from the source text:
    ``k = k.repeat(1, self.n_rep, 1, 1)`` -> ``k = k.repeat_interleave(self.n_rep, dim=1)``."""
    segment = rep.source.strip()
    filename, line, _, _ = rep.where
    if not segment or filename is None or line is None:
        return None
    try:
        node = ast.parse(segment, mode="eval").body
    except SyntaxError:
        return None
    fixed = _fixed_call(node, segment, rep, groups, heads)
    text = source_line(filename, line)
    if fixed is None or text.count(segment) != 1:
        return None
    text = text.replace(segment, fixed).strip()
    code, hash_, _ = text.partition("#")
    if hash_:  # leave the user's comment out when the code before it stands alone
        try:
            ast.parse(code.strip())
            text = code.strip()
        except SyntaxError:
            pass
    return line, text


def _is_head_axis(meta, dim: int, heads: int) -> bool:
    """Whether axis ``dim`` of the tensor that was copied holds the key/value heads alone: a
    repeat_interleave along it copies whole heads. Along a flat (Hkv*d) feature axis it would
    copy single features, so no rewrite is offered there."""
    return 0 <= dim < meta.ndim and meta.shape[dim] == heads


def _fixed_call(node, segment: str, rep, groups: int, heads: int) -> str | None:
    if not isinstance(node, ast.Call) or not rep.inputs:
        return None
    func, args = node.func, node.args
    src = rep.inputs[0]
    if rep.op == "Tensor.repeat" and isinstance(func, ast.Attribute) and func.attr == "repeat" \
            and args and not node.keywords:
        reps = ints(rep.args[1:])
        if reps is None or len(reps) != len(args) or len(reps) != src.ndim:
            return None
        dims = [i for i, r in enumerate(reps) if r > 1]
        if len(dims) != 1 or reps[dims[0]] != groups or not _is_head_axis(src, dims[0], heads):
            return None
        return f"{ast.unparse(func.value)}.repeat_interleave({ast.unparse(args[dims[0]])}, dim={dims[0]})"
    if rep.op == "torch.tile" and len(args) == 2 and isinstance(args[1], (ast.Tuple, ast.List)) \
            and not node.keywords:
        reps = ints(rep.arg(1, "dims"))
        if reps is None or len(reps) != len(args[1].elts) or len(reps) != src.ndim:
            return None
        dims = [i for i, r in enumerate(reps) if r > 1]
        if len(dims) != 1 or reps[dims[0]] != groups or not _is_head_axis(src, dims[0], heads):
            return None
        count = ast.unparse(args[1].elts[dims[0]])
        return f"{ast.unparse(args[0])}.repeat_interleave({count}, dim={dims[0]})"
    copies = args and isinstance(args[0], ast.BinOp) and isinstance(args[0].op, ast.Mult) \
        and isinstance(args[0].left, ast.List) and len(args[0].left.elts) == 1
    if rep.op in CATS and copies:
        dim = rep.arg(1, "dim", 0)
        if not isinstance(dim, int) or not _is_head_axis(src, norm_dim(dim, src.ndim), heads):
            return None
        tensor, count = ast.unparse(args[0].left.elts[0]), ast.unparse(args[0].right)
        return f"{tensor}.repeat_interleave({count}, dim={dim})"
    if rep.op in STACKS and copies:  # stack([v] * G, dim=j) before head axis j: stack after it
        dim = rep.arg(1, "dim", 0)
        if not isinstance(dim, int):
            return None
        j = norm_dim(dim, src.ndim + 1)
        if not _is_head_axis(src, j, heads):
            return None  # only the copy axis right before the heads moves by one, nothing else
        keyword = next((k for k in node.keywords if k.arg == "dim"), None)
        if keyword is not None:
            rest = [ast.unparse(a) for a in args]
        elif len(args) == 2:
            rest = [ast.unparse(args[0])]
        else:
            return None
        return f"{ast.unparse(func)}({', '.join([*rest, f'dim={j + 1}'])})"
    pattern = next((a for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    and "->" in a.value), None)
    if pattern is not None:  # einops: b h t d -> b (g h) t d  becomes  b (h g) t d
        left, _, right = pattern.value.partition("->")
        new = [n for n in re.findall(r"\w+", right) if n not in re.findall(r"\w+", left)]
        group = re.search(r"\((\w+)\s+(\w+)\)", right)
        if len(new) != 1 or group is None or group.group(1) != new[0]:
            return None
        old, new_group = group.group(0), f"({group.group(2)} {group.group(1)})"
        return segment.replace(old, new_group) if segment.count(old) == 1 else None
    return None
