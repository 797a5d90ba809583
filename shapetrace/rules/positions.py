"""position-axis: positions sized, cut or applied along an axis that is not the sequence.

A position table holds one row per position: made in the forward from ``torch.arange`` (looked
up in a longer embedding table, or turned into angles by a product with frequencies and then
``sin``/``cos``/``polar``), or a table of the module's own (a sinusoid buffer, a learned
embedding, a rotary cache) whose axis as long as the model's maximum length (L) is cut short.
Such a table must run along the time axis of the data it meets. This rule follows the position
axis of each one, by its place through the ops (never by a variable's name), to the first
elementwise op that meets data descended from the inputs, and reads which axis of that data it
lies along there. When the positions were counted by the batch, the heads, the head size or the
width (``torch.arange(q.size(1))`` on a ``(B, H, T, d)`` tensor, ``self.pe[:x.size(0)]`` on a
batch-first ``(B, T, C)`` input) and they meet the data along that very axis, every shape
broadcasts and nothing raises, yet sample b gets position b or head h is turned by h. The
finding is made at the line that sized or cut the positions.

Where nothing proves that a tensor holds positions (an ``arange(B)`` that picks one row per
sample, a per-head table looked up whole) the rule says nothing.
"""

from __future__ import annotations

from ..analysis.facts import Analysis
from ..analysis.graph import backward_positions, forward_position, reshape_position
from ..base.ops import (
    ADDS,
    CASTS,
    DIVS,
    DROPOUTS,
    ELEMENTWISE_NAMES,
    EMBEDDINGS,
    EXPANDS,
    MULS,
    PERMUTES,
    RESHAPES,
    SAME_AXES,
    WRITES,
    base_name,
    einsum_letters,
    einsum_terms,
    norm_dim,
)
from ..base.records import OpRecord, TensorArg, TensorMeta
from ..base.source import display_path
from .registry import diagnostic

#: The axes positions must never run along, and what each holds.
_WRONG = {"B": "the batch", "H": "the heads", "d": "the head size", "C": "the model width"}
_WHAT_GOES_WRONG = {
    "B": "sample b gets position b, and every token of a sample the same one",
    "H": "each head is turned by its own index, and the tokens not at all",
    "d": "each feature gets a position of its own, and the tokens none",
    "C": "each feature gets a position of its own, and the tokens none",
}
_TIME = ("T", "S", "L")

_SUBS = frozenset({"-", "Tensor.sub", "torch.sub", "Tensor.sub_", "-=", "Tensor.__rsub__",
                   "Tensor.rsub", "torch.rsub"})
_ARITHMETIC = ADDS | _SUBS | MULS | DIVS | frozenset(
    {"*=", "/=", "Tensor.__rmul__", "Tensor.__rdiv__", "Tensor.__rtruediv__"})
#: Products that turn positions into angles when the other operand holds frequencies.
_PRODUCTS = frozenset({"torch.outer", "Tensor.outer", "torch.ger", "Tensor.ger", "torch.einsum",
                       "@", "torch.matmul", "Tensor.matmul", "torch.mm", "Tensor.mm"})
#: Ops that make position features out of angles (or out of positions directly).
_WAVES = frozenset({"torch.sin", "Tensor.sin", "torch.cos", "Tensor.cos", "torch.exp",
                    "Tensor.exp", "torch.polar"})
#: Elementwise ops of one tensor that keep every value where it is.
_EXPS = frozenset({"torch.exp", "Tensor.exp"})
_UNARY = frozenset({"Tensor.neg", "torch.neg", "Tensor.__neg__", "Tensor.abs", "torch.abs",
                    "Tensor.clamp", "torch.clamp", "Tensor.clip", "torch.clip",
                    "Tensor.contiguous", "torch.view_as_complex", "torch.view_as_real",
                    "Tensor.long", "Tensor.int"}) | _WAVES
_CONCATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
_REPEATS = frozenset({"Tensor.repeat_interleave", "torch.repeat_interleave", "Tensor.repeat"})
_LINEAR = frozenset({"F.linear"})
_SPLITS = frozenset({"Tensor.split", "torch.split", "Tensor.chunk", "torch.chunk"})
_UNBINDS = frozenset({"Tensor.unbind", "torch.unbind"})
_PIECES = _SPLITS | _UNBINDS
#: Ops whose output keeps every axis of their first input (norms, activations, dropout).
_SAME = SAME_AXES | DROPOUTS
_SAME_LEADING = frozenset({"F.layer_norm", "torch.layer_norm", "F.rms_norm"})
_ARANGE = "torch.arange"
_CUTS = frozenset({"[]", "Tensor.narrow", "torch.narrow"})
_PURE = CASTS | RESHAPES | PERMUTES | EXPANDS | ADDS | _SUBS | MULS | DIVS | frozenset(
    {"[]", "Tensor.neg", "torch.neg", "Tensor.clamp", "torch.clamp", "Tensor.abs"})
#: How many ops a position table is followed through.
_DEPTH = 40

INDEX, ANGLES, FEATURES = "positions", "angles", "position features"


class _Source:
    """Where positions came from: the record that sized or cut them, the axis they run along,
    its name, and whether only an addition to the data counts as applying them."""

    __slots__ = ("rec", "pos", "name", "state", "added_only", "table")

    def __init__(self, rec, pos, name, state, added_only=False, table=None):
        self.rec, self.pos, self.name, self.state = rec, pos, name, state
        self.added_only, self.table = added_only, table


def check_positions(analysis: Analysis):
    dims = analysis.dims
    wrong = {n for n in _WRONG if n in dims and not dims.shared(dims[n])}
    if not wrong:
        return
    written = None
    for rec in analysis.records:
        if rec.error is not None or not rec.outputs:
            continue
        if rec.op == _ARANGE:
            source = _counted(analysis, rec, wrong)
        elif rec.op in _CUTS:
            if written is None:
                written = _written(analysis)
            source = _cut(analysis, rec, wrong, written)
        else:
            continue
        if source is None:
            continue
        met = _meeting(analysis, source)
        if met is not None:
            yield _finding(analysis, source, *met)


# --- sources ------------------------------------------------------------------------------------

def _label(analysis: Analysis, size: int) -> str:
    return analysis.dims.label(size)


def _counted(analysis: Analysis, rec: OpRecord, wrong) -> _Source | None:
    """``torch.arange(n)`` with n the size of an axis positions must not run along."""
    out = rec.outputs[0]
    if out.ndim != 1:
        return None
    name = _label(analysis, out.shape[0])
    return _Source(rec, 0, name, INDEX) if name in wrong else None


def _written(analysis: Analysis) -> set[int]:
    """The tensors the forward writes into (a cache, a state): never position tables."""
    found = set()
    for rec in analysis.records:
        if rec.inputs and (rec.op in WRITES or rec.op.endswith("_")):
            found.add(id(rec.inputs[0]))
    return found


def _cut(analysis: Analysis, rec: OpRecord, wrong, written) -> _Source | None:
    """A table of the module's own (not descended from the inputs, not written by the forward)
    whose one axis is cut short: a position table when that axis is as long as the model's
    maximum length (L) or the sequence (a table of T rows made in the forward, cut to H rows),
    or, cut to the batch size, when it is added to the data; rows the forward made from the
    positions (the cos and sin of ``arange(T)``'s angles), cut to the batch size, in any use (a
    rotation multiplies them in)."""
    table = rec.inputs[0] if rec.inputs else None
    if table is None or id(table) in written or analysis.lineage.batched(table):
        return None
    mapping = basic_index(rec)
    if mapping is None:
        return None
    out = rec.outputs[0]
    cut = [(i, j) for i, j in enumerate(mapping)
           if j is not None and out.shape[j] < table.shape[i]]
    if len(cut) != 1:
        return None
    i, j = cut[0]
    name = _label(analysis, out.shape[j])
    if name not in wrong:
        return None
    axis = table.axes[i] if table.axes is not None and i < len(table.axes) else None
    if axis is not None and len(axis) == 1 and (axis[0][1] == "L" or axis[0][1] in _TIME and name != "B"):
        return _Source(rec, j, name, FEATURES, table=table)  # one row per position, cut short
    if name == "B":
        # rows made in the forward from the positions (angles of ``arange(T)``): applied in any
        # way (a rotation multiplies them in); a table of the module's own only when added
        made = axis is not None and len(axis) == 1 and axis[0][1] in ("T", "S")
        return _Source(rec, j, name, FEATURES, added_only=not made, table=table)
    return None


def basic_index(rec: OpRecord) -> list[int | None] | None:
    """For a cut by slices, ints and None (no tensor index): where each input axis lies in the
    output (None where an int removed it)."""
    src = rec.inputs[0]
    if rec.op != "[]":  # narrow(dim, start, length)
        dim = rec.arg(1, "dim")
        if not isinstance(dim, int):
            return None
        return list(range(src.ndim))
    index = rec.arg(1)
    if not isinstance(index, tuple):
        index = (index,)
    real = sum(1 for item in index if item is not None and item is not Ellipsis)
    mapping: list[int | None] = []
    out = 0
    for item in index:
        if item is None:
            out += 1
        elif item is Ellipsis:
            for _ in range(src.ndim - real):
                mapping.append(out)
                out += 1
        elif isinstance(item, bool) or isinstance(item, (TensorArg, list)):
            return None
        elif isinstance(item, int):
            mapping.append(None)
        elif isinstance(item, slice):
            mapping.append(out)
            out += 1
        else:
            return None
    while len(mapping) < src.ndim:
        mapping.append(out)
        out += 1
    if len(mapping) != src.ndim or out != rec.outputs[0].ndim:
        return None
    return mapping


# --- following the positions ---------------------------------------------------------------------

def _meeting(analysis: Analysis, source: _Source):
    """``(record, data operand, axis of the data)`` where the positions meet data along an axis
    of the name they were counted by; None where they meet it along another axis, or never."""
    graph = analysis.graph
    todo = [(source.rec, 0, source.pos, source.state, 0)]
    seen = set()
    found = None
    while todo:
        rec, out_slot, pos, state, depth = todo.pop()
        key = (rec.index, out_slot, pos, state)
        if key in seen or depth > _DEPTH:
            continue
        seen.add(key)
        for consumer, slot in graph.consumers.get((rec.index, out_slot), ()):
            if consumer.error is not None or not consumer.outputs:
                continue
            step = _step(analysis, consumer, slot, pos, state, source)
            if step is None:
                continue
            if step[0] == "met":
                if found is None or step[1].index < found[0].index:
                    found = step[1:]  # the first op, in trace order, that applies them
                continue
            _, nxt_slot, nxt_pos, nxt_state = step
            todo.append((consumer, nxt_slot, nxt_pos, nxt_state, depth + 1))
    return found


def _step(analysis: Analysis, rec: OpRecord, slot: int, pos: int, state: str, source: _Source):
    """Where the positions go through ``rec`` (read at input ``slot``, axis ``pos``):
    ``("on", output slot, axis, state)``, ``("met", rec, data, axis)`` where they meet the data
    along a wrong axis, or None where they stop (meet it along the right one, or are lost)."""
    op = rec.op
    meta = rec.inputs[slot]
    out = rec.outputs[0]
    if op in _ARITHMETIC or op in WRITES and op != "[]=":
        return _arithmetic(analysis, rec, slot, pos, state, source)
    if op == "[]=":
        return _written_into(rec, slot, pos, state)
    if op in EMBEDDINGS:
        if slot != 0 or state != INDEX or len(rec.inputs) < 2:
            return None
        return ("on", 0, pos, FEATURES) if _longer_table(analysis, rec.inputs[1], meta, pos) else None
    if op == "[]" and slot == 1 and isinstance(rec.arg(1), TensorArg):
        if state != INDEX:
            return None  # a table indexed by position features: not a lookup of positions
        return ("on", 0, pos, FEATURES) if _longer_table(analysis, rec.inputs[0], meta, pos) else None
    if op in _PRODUCTS:
        return _product(analysis, rec, slot, pos, state)
    if op in _WAVES:
        if op == "torch.polar" and slot != 1 or op in _EXPS and state != ANGLES:
            return None  # exp(-k * arange(...)) makes frequencies; exp(1j * angles) turns
        return ("on", 0, pos, FEATURES) if pos < out.ndim and out.shape[pos] == meta.shape[pos] else None
    if op in _LINEAR:
        return ("on", 0, pos, state) if slot == 0 and state == FEATURES and pos < meta.ndim - 1 else None
    if slot != 0 and op not in _CONCATS:
        return None
    if op in _UNARY or op in CASTS:
        if pos < out.ndim and out.shape[pos] == meta.shape[pos]:
            return "on", 0, pos, state
        return None
    if op == "[]":
        mapping = basic_index(rec)
        if mapping is None or mapping[pos] is None or out.shape[mapping[pos]] != meta.shape[pos]:
            return None
        return "on", 0, mapping[pos], state
    if op in _CONCATS:
        return _concat(rec, pos, state)
    if op in _REPEATS:
        return _repeat(rec, pos, state)
    if op in ("Tensor.chunk", "torch.chunk", "Tensor.split", "torch.split", "Tensor.unbind"):
        return None
    nxt = forward_position(rec, slot, pos)
    return None if nxt is None else ("on", 0, nxt, state)


def _arithmetic(analysis: Analysis, rec: OpRecord, slot: int, pos: int, state: str, source):
    out = rec.outputs[0]
    meta = rec.inputs[slot]
    at = pos + out.ndim - meta.ndim
    if at < 0 or out.shape[at] != meta.shape[pos]:
        return None
    others = [(s, m) for s, m in enumerate(rec.inputs) if s != slot]
    big = [(s, m) for s, m in others if _numel(m) > 1]
    if not big:
        return "on", 0, at, state
    data = [(s, m) for s, m in big if analysis.lineage.batched(m)]
    if data:
        if state != FEATURES or (source.added_only and rec.op not in ADDS):
            return None
        s, m = data[0]
        j = at - (out.ndim - m.ndim)
        if j < 0 or m.shape[j] != meta.shape[pos] or m.axes is None:
            return None
        axis = m.axes[j]
        if len(axis) == 1 and axis[0][1] == source.name and _genuine(analysis, m, j):
            return "met", rec, m, j
        return None
    if state == INDEX:
        pure = all(_pure(analysis, m) for _, m in big)
        if not pure and (rec.op in MULS or rec.op in DIVS and slot == 0):
            return "on", 0, at, ANGLES  # positions times frequencies, or over wavelengths
        if pure and (rec.op in ADDS or rec.op in _SUBS):
            return "on", 0, at, INDEX  # relative positions: one position minus another
        return None
    return "on", 0, at, state


def _written_into(rec: OpRecord, slot: int, pos: int, state: str):
    """``table[:, 0::2] = sin(...)``: the values written keep their axes in the table."""
    if slot != 1 or len(rec.inputs) < 2:
        return None
    index = rec.arg(1)
    items = index if isinstance(index, tuple) else (index,)
    if not all(isinstance(i, slice) or i is Ellipsis for i in items):
        return None
    target, value = rec.inputs[0], rec.inputs[1]
    at = pos + target.ndim - value.ndim
    if at < 0 or target.shape[at] != value.shape[pos]:
        return None
    return "on", 0, at, state


def _product(analysis: Analysis, rec: OpRecord, slot: int, pos: int, state: str):
    """Positions times frequencies (``outer(t, inv_freq)``, ``einsum("t,f->tf")``): angles."""
    if state != INDEX or len(rec.inputs) != 2:
        return None
    other = rec.inputs[1 - slot]
    if analysis.lineage.batched(other) or _pure(analysis, other):
        return None
    out = rec.outputs[0]
    meta = rec.inputs[slot]
    if rec.op in ("torch.outer", "Tensor.outer", "torch.ger", "Tensor.ger"):
        return "on", 0, slot, ANGLES
    if rec.op == "torch.einsum":
        parsed = einsum_terms(rec)
        if parsed is None:
            return None
        terms, rhs = parsed
        letters = einsum_letters(terms[slot], meta.ndim)
        out_letters = einsum_letters(rhs, out.ndim)
        if letters is None or out_letters is None or letters[pos] not in out_letters \
                or letters[pos] == ".":
            return None
        return "on", 0, out_letters.index(letters[pos]), ANGLES
    # a matmul: the rows of the left operand, the columns of the right one
    if meta.ndim < 2:
        return None
    if slot == 0 and pos == meta.ndim - 2:
        return "on", 0, out.ndim - 2, ANGLES
    if slot == 1 and pos == meta.ndim - 1:
        return "on", 0, out.ndim - 1, ANGLES
    return None


def _concat(rec: OpRecord, pos: int, state: str):
    out = rec.outputs[0]
    dim = rec.arg(1, "dim", 0)
    if not isinstance(dim, int):
        return None
    if rec.op == "torch.stack":
        dim = norm_dim(dim, out.ndim)
        return "on", 0, pos if pos < dim else pos + 1, state
    dim = norm_dim(dim, out.ndim)
    return None if dim == pos else ("on", 0, pos, state)


def _repeat(rec: OpRecord, pos: int, state: str):
    meta, out = rec.inputs[0], rec.outputs[0]
    if rec.op == "Tensor.repeat":
        at = pos + out.ndim - meta.ndim
        return ("on", 0, at, state) if out.shape[at] == meta.shape[pos] else None
    dim = rec.arg(2, "dim")
    if not isinstance(dim, int) or norm_dim(dim, meta.ndim) == pos:
        return None
    return "on", 0, pos, state


def _genuine(analysis: Analysis, meta: TensorMeta, pos: int) -> bool:
    """Whether axis ``pos`` of the data holds what its name says by where it came from: traced
    back through the ops that keep it to an input or a parameter (named by its declared size),
    or to a view that split it out of a named width (H and d out of C). An axis cut short on the
    way (``idx[:, :-2]``: T - 2 tokens, as many as the batch at the probe sizes) is named by its
    size alone, and so is one that an unknown op made: those are not trusted."""
    graph = analysis.graph
    for _ in range(_DEPTH):
        rec = graph.producer(meta)
        if rec is None:
            return True
        if rec.error is not None:
            return False
        op = rec.op
        src = rec.inputs[0] if rec.inputs else None
        if op in RESHAPES:
            back = reshape_position(meta.shape, src.shape, pos)
            if back is None:  # a piece of a split or a merge: named by factoring the width
                return op not in ("Tensor.unsqueeze", "torch.unsqueeze")
            meta, pos = src, back
            continue
        if op == "[]" and not isinstance(rec.arg(1), TensorArg):
            mapping = basic_index(rec)
            if mapping is None or pos not in mapping:
                return False
            i = mapping.index(pos)
            if src.shape[i] != meta.shape[pos]:
                return False  # cut short: its name is its size's
            meta, pos = src, i
            continue
        if op in EMBEDDINGS:
            if pos >= src.ndim:
                return True  # the table's width
            meta = src
            continue
        if op in _LINEAR or op in _SAME_LEADING:
            if pos >= src.ndim - 1 and op in _LINEAR:
                return True  # the layer's width
            if pos >= src.ndim:
                return False
            meta = src
            continue
        if op in _PIECES:
            dim = rec.arg(2 if op in _SPLITS else 1, "dim", 0)
            if not isinstance(dim, int):
                return False
            dim = norm_dim(dim, src.ndim)
            if op in _UNBINDS:
                pos = pos if pos < dim else pos + 1
            elif pos == dim:
                return False
            meta = src
            continue
        found = [(s, p) for s, p in backward_positions(rec, pos)
                 if rec.inputs[s].shape[p] == meta.shape[pos]]
        if not found and (op in _UNARY or op in _SAME or base_name(op) in ELEMENTWISE_NAMES) \
                and src is not None and src.shape == meta.shape:
            found = [(0, pos)]
        if not found or op in EXPANDS:
            return False
        s, pos = found[0]
        meta = rec.inputs[s]
    return False


def _longer_table(analysis: Analysis, table: TensorMeta, index: TensorMeta, pos: int) -> bool:
    """A lookup of positions: a table of the module's own with more rows than positions asked
    for (a per-head table looked up whole by ``arange(H)`` holds no positions)."""
    return table.ndim >= 1 and not analysis.lineage.batched(table) \
        and table.shape[0] > index.shape[pos]


def _pure(analysis: Analysis, meta: TensorMeta, depth: int = 12) -> bool:
    """Whether ``meta`` holds positions themselves: an ``arange`` moved, cast, shifted or
    scaled by numbers, or one such minus another; not frequencies (through a power or an
    exponential) nor anything from outside the trace."""
    rec = analysis.graph.producer(meta)
    if rec is None or depth == 0:
        return False
    if rec.op == _ARANGE:
        return True
    if rec.op not in _PURE:
        return False
    if rec.op in DIVS and len(rec.inputs) > 1 and _numel(rec.inputs[1]) > 1:
        return False
    tensors = [m for m in rec.inputs if _numel(m) > 1]
    if rec.op == "[]":
        tensors = tensors[:1]
    return bool(tensors) and all(_pure(analysis, m, depth - 1) for m in tensors)


def _numel(meta: TensorMeta) -> int:
    n = 1
    for s in meta.shape:
        n *= s
    return n


# --- the finding ---------------------------------------------------------------------------------

def _finding(analysis: Analysis, source: _Source, rec: OpRecord, data: TensorMeta, axis: int):
    name = source.name
    what = _WRONG[name]
    shape = analysis.shape_of(data)
    code = " ".join(source.rec.source.split())
    if source.rec.op == _ARANGE:
        made = f"`{code}` counts positions by {what} ({name})" if code else \
            f"torch.arange counts positions by {what} ({name})"
    else:
        made = f"the position table {analysis.shape_of(source.table)} is cut to {what} ({name})"
        if code:
            made += f" by `{code}`"
    where = f" at line {rec.line}" if rec.line != source.rec.line else ""
    message = (f"{made}, then applied along axis {axis} ({name}) of {shape}{where}: "
               f"{_WHAT_GOES_WRONG[name]}")
    time = next((i for i, a in enumerate(data.axes or ())
                 if len(a) == 1 and a[0][1] in _TIME), None)
    if time is not None:
        hint = (f"Count and cut positions by the sequence length: in {shape} that is axis "
                f"{time} ({data.axes[time][0][1]}), .size({time}); apply them along that axis.")
    else:
        hint = "Count and cut positions by the sequence length, and apply them along the time axis."
    called = _called_with(analysis, source.rec, data)
    if called is not None:
        message += (f"; the module that counts them (at line {source.rec.line}) is handed that "
                    f"tensor at line {called[1]}")
    return diagnostic("position-axis", message, hint, rec=source.rec, axis=name,
                      applied=rec.line, made_at=called)


#: ops that carry a tensor's axes through unchanged in meaning (a view, a half, a cast)
_CARRIES = frozenset({"Tensor.chunk", "torch.chunk", "Tensor.split", "torch.split", "Tensor.float",
                      "Tensor.type_as", "Tensor.to", "Tensor.contiguous", "Tensor.__getitem__",
                      "[]", "Tensor.unbind", "torch.unbind", "Tensor.clone"})


def _called_with(analysis: Analysis, counted: OpRecord, data: TensorMeta):
    """``(file, line)`` of the call of the submodule that counted the positions, when the
    tensor it counted them on came in from its caller (``Q = self.rotary(Q)`` handing a
    (B, H, T, d) tensor to a rotary module that reads (B, T, H, d)): the tensor's layout at
    that call is what does not fit. None when the positions were counted where the tensor
    was made, or no call of that submodule is recorded."""
    module = counted.module or ""
    if "." not in module:
        return None  # counted by the module checked itself
    inside = lambda rec: (rec.module or "") == module or (rec.module or "").startswith(module + ".")
    maker = analysis.graph.producer(data)
    for _ in range(12):  # back through what the submodule did to its input (x.chunk(2), .float())
        if maker is None or not inside(maker) or maker.op not in _CARRIES or not maker.inputs:
            break
        maker = analysis.graph.producer(maker.inputs[0])
    if maker is not None and inside(maker):
        return None  # made inside the submodule: counted where it was made
    for rec in analysis.records[counted.index:]:
        for out in rec.outputs:
            returned = getattr(out, "returned", None)
            if returned is not None and returned.module == module and returned.site is not None:
                filename, line = returned.where[0], returned.where[1]
                return (display_path(filename) if filename else None, line) if line else None
    return None
