"""Value probes: the few facts about values that the value-based rules need.

Values exist only while an op runs, so the probes run then, called by the tracer after an op,
with the tracer's own mode and every other torch-function mode switched off. They write typed
results onto the record (``rec.weight_sums``, ``rec.non_finite``) and nothing else:

- **weight sums** (unnormalized-attention): for an operand of a matmul-like op that descends
  from a softmax a few ops back, how far it is from summing to 1 over its last two axes;
- **non-finite** (non-finite): each op whose outputs hold a NaN (or an Inf) that none of its
  inputs held (``rec.non_finite``, origin None), and the ops that pass it on (``origin``: the
  record that made it), so that the rule can tell a NaN that reaches an output from one the
  model drops (T5's ``log(0)`` in its position buckets, discarded by ``torch.where``). Outputs
  are looked at (one sum each) only where something can appear: ops such as softmax, div, log,
  sqrt, exp; half precision; a non-finite number in the call (``x * -inf``); an op that reads
  a tensor already found non-finite. Inputs are looked at only when an output is not finite,
  while they still exist.
"""

from __future__ import annotations

import math

import torch

from ..base.compat import (
    compiling_check,
    fake_constant,
    is_fake,
    torch_function_disabler,
    version_of,
)
from ..base.ops import (
    EXPANDS,
    PERMUTES,
    PLAIN_MATMULS,
    RESHAPES,
    SOFTMAXES,
    UNINITIALISED,
    einsum_letters,
    einsum_terms,
    matmul_operands,
    softmax_dim,
)
from ..base.records import NonFinite, OpRecord, WeightSums, descends_from
from .causes import cause

Tensor = torch.Tensor
HALF = (torch.float16, torch.bfloat16)
#: Floating dtypes whose sum a plain reduction reads (the common case of the finite probe).
_SUMMED = frozenset({torch.float32, torch.float64})
_STRIDED = torch.strided
_INFINITIES = (math.inf, -math.inf)
_is_compiling = compiling_check()
_Disabled = torch_function_disabler()

#: Ops whose output holds only values of their first input, unchanged: finite when it is.
_UNCHANGED = RESHAPES | PERMUTES | EXPANDS | frozenset(
    {"[]", "Tensor.contiguous", "Tensor.clone", "torch.clone", "Tensor.detach", "Tensor.split",
     "torch.split", "Tensor.chunk", "torch.chunk", "Tensor.unbind", "torch.unbind"})

#: How many ops after a softmax an operand may be and still count as attention weights.
SOFTMAX_DEPTH = 8


class ValueProbes:
    """The probes of one trace, with the little state they keep between ops."""

    __slots__ = ("records", "near_softmax", "tainted", "row_sums")

    def __init__(self, records: list[OpRecord]):
        self.records = records
        #: softmax index -> (its axis, the version of its output) for a softmax whose weights
        #: hold no NaN and no Inf (they sum to 1 along that axis while nothing writes to them)
        self.row_sums: dict[int, tuple] = {}
        #: record index -> ops from the nearest softmax, kept for records within SOFTMAX_DEPTH
        #: of one (entered by the tracer as ops are recorded, so that a matmul operand far from
        #: every softmax is settled by one lookup): the weight probe walks back only from
        #: operands listed here.
        self.near_softmax: dict[int, int] = {}
        #: record index -> the record that made the NaN or Inf its outputs hold
        self.tainted: dict[int, int] = {}

    def after(self, rec: OpRecord, outs, args, kwargs, *, finite: bool, weights: bool,
              numbers: bool = True) -> None:
        """Runs the probes an op needs, with torch functions disabled: the probes' own ops must
        not reach an enclosing trace. Inside a ``torch.compile`` region they do not run: their
        reads of values (``.item()``) would break the user's compiled graph. ``numbers``: the
        call may pass a NaN or an Inf itself (False: it passes none, as the tracer knows)."""
        if _is_compiling():
            return
        if weights:  # only operands a few ops after a softmax: most products (q @ k) have none
            near, weights = self.near_softmax, False
            for meta in rec.inputs:
                if meta._made_by in near:
                    weights = True
                    break
            if not weights and not finite:
                return
        if finite and not numbers and len(outs) == 1:
            # The usual case, settled by one sum (a softmax's too): one plain float
            # output that holds no NaN and no Inf (the full probe below finds the same and
            # records nothing). A product of attention weights too, its weights probed after.
            t = outs[0]
            if type(t) is Tensor and t.dtype in _SUMMED and t.layout is _STRIDED \
                    and not t.is_meta and t.numel():
                if weights and rec.op in PLAIN_MATMULS and not self.reads_tainted(rec):
                    with _Disabled():
                        averaged = self._weights(rec, args, kwargs)
                    if averaged:
                        return
                    weights = False
                settled = self._settled_softmax(rec, t) if rec.op in SOFTMAXES else None
                if settled:
                    return
                try:  # a softmax that holds a NaN or an Inf (settled False) goes to the full probe
                    with _Disabled():
                        total = math.nan if settled is False else _values(t).sum().item()
                except Exception:  # under a functorch transform: the full probe says why
                    total = math.nan
                if total == total and total not in _INFINITIES:
                    if not weights:
                        return
                    finite = False
        with _Disabled():
            if finite:
                self._finite(rec, outs, args, kwargs)
            if weights:
                self._weights(rec, args, kwargs)

    def _settled_softmax(self, rec: OpRecord, t: Tensor) -> bool | None:
        """A softmax's plain float output read once, for its probe and the product that takes it
        as weights (:meth:`_kept_sums`). True: no NaN nor Inf; False: one; None: not read.

        A softmax's row is finite or NaN as a whole (a NaN or +inf score, or a row of -inf,
        makes its denominator NaN), so the sum of one weight per row (``(B, H, T)`` of
        ``(B, H, T, T)``) is finite exactly when every row is; then each row sums to 1 along
        the axis, all that the weight probe would read of them."""
        found = softmax_dim(rec) if t.ndim else None
        if found is None:
            return None
        try:
            with _Disabled():
                total = _values(t).select(found[0], 0).sum().item()
        except Exception:  # under a functorch transform: the full probe says why
            return None
        if total != total or total in _INFINITIES:
            return False
        version, kept = version_of(t), self.row_sums
        if version is not None:
            if len(kept) >= SOFTMAX_DEPTH:  # the latest few: a product follows its softmax
                del kept[next(iter(kept))]
            kept[rec.index] = (found[0], version)
        return True

    def _weights(self, rec: OpRecord, args, kwargs) -> bool:
        """The weight sums of the operands that descend from a softmax. True when the product
        averages (a plain product whose first operand is a softmax's finite weights as made,
        summed along its axis): in float32 and float64 an average of finite values is finite,
        so its output holds a NaN or an Inf only where the values did, which an op that can
        make one was probed for, or they came from outside: the output need not be read."""
        tensors = None
        averaged = False
        for i, meta in enumerate(rec.inputs):
            made_by = meta._made_by
            if made_by not in self.near_softmax \
                    or not descends_from(self.records, made_by, SOFTMAXES, SOFTMAX_DEPTH):
                continue
            if tensors is None:
                tensors = operands(args, kwargs)
            if i >= len(tensors):
                break
            only = _contracted(rec, i)
            sums = self._kept_sums(meta, tensors[i], only)
            averaged = averaged or (sums is not None and i == 0 and rec.op in PLAIN_MATMULS)
            sums = sums or weight_sums(tensors[i], _einsum_contracted(rec, i), only)
            if sums is not None:
                rec.weight_sums = {**(rec.weight_sums or {}), i: sums}
        return averaged

    def _kept_sums(self, meta, t: Tensor, only: tuple[int, ...] | None) -> WeightSums | None:
        """:func:`weight_sums` of ``t``, a softmax's output as made (nothing wrote to it since)
        that its probe found free of NaN and Inf, summed over the softmax's axis alone: every
        slice sums to 1 and no weight is negative."""
        kept = self.row_sums.get(meta._made_by)
        if kept is None or meta._slot or only is None or version_of(t) != kept[1] \
                or tuple(a for a in only if a < t.ndim) != (kept[0],):
            return None
        return WeightSums(0.0, {kept[0]: 0.0})

    def reads_tainted(self, rec: OpRecord) -> bool:
        """Whether ``rec`` reads a tensor found to hold a NaN or an Inf."""
        tainted = self.tainted
        for meta in rec.inputs:
            if meta._made_by in tainted:  # None (from outside the trace) never is
                return True
        return False

    def _origin_of_inputs(self, rec: OpRecord) -> int | None:
        for meta in rec.inputs:
            origin = self.tainted.get(meta._made_by)  # None (from outside the trace) never is
            if origin is not None:
                return origin
        return None

    def _finite(self, rec: OpRecord, outs, args, kwargs) -> None:
        literal = non_finite_literals(rec, self.tainted)
        found = None
        for slot, t in enumerate(outs):
            state = finiteness(t, only_nan="inf" in literal)
            if state is None:
                continue
            nan, inf = state
            if nan and "nan" not in literal:
                found = slot, "NaN"
                break
            if inf and "inf" not in literal:
                found = slot, "Inf"
                break
        if found is None:
            return  # finite again (a where, a cast to integers dropped it) or never touched
        slot, what = found
        origin = self._origin_of_inputs(rec)
        if origin is not None:  # passed on from an op already found
            rec.non_finite = NonFinite(what, slot, None, origin)
            self.tainted[rec.index] = origin
            return
        in_nan = in_inf = False
        tensors = operands(args, kwargs)
        for t in tensors:
            state = finiteness(t)
            if state is not None:
                in_nan, in_inf = in_nan or state[0], in_inf or state[1]
        upstream = in_nan or (what == "Inf" and in_inf)
        origin = None
        if not upstream and in_inf and rec.op in SOFTMAXES:
            # a softmax of +inf scores is NaN: the +inf was made upstream (an overflowing
            # q @ k), unlike a row of -inf masks, which this softmax turns into 0/0
            upstream = any(_holds_posinf(t) for t in tensors)
            if not upstream:  # -inf that no mask asked for: an overflow below -max
                origin = self._made_upstream(rec)
                upstream = origin is not None
            else:  # +inf a fill asked for (masked_fill(mask, +inf)): made there
                origin = self._made_upstream(rec, posinf_fill=True)
        if upstream:  # it came in with the inputs: made by an op not looked at
            if origin is None:
                origin = self._made_upstream(rec)
            if origin is not None:
                rec.non_finite = NonFinite(what, slot, None, origin)
                self.tainted[rec.index] = origin
            return
        where = _first_index(outs[slot], what)
        rec.non_finite = NonFinite(what, slot, where, cause=cause(rec, tensors, what, where))
        self.tainted[rec.index] = rec.index

    def _made_upstream(self, rec: OpRecord, budget: int = 32, *,
                       posinf_fill: bool = False) -> int | None:
        """The op that made the NaN or Inf ``rec``'s inputs hold, found by walking back through
        the tensors that hold one to the first op whose inputs all exist still and hold none
        and which did not ask for one (a -inf fill); marked as where it was made. None where a
        tensor on the way no longer exists: then nothing is said."""
        records = self.records
        frontier = [m for m in rec.inputs if m._made_by is not None]
        seen: set[int] = set()
        found = None  # (record index, output slot, tensor, "NaN" or "Inf")
        tainted = self.tainted
        while frontier and budget:
            meta = frontier.pop()
            index = meta._made_by
            if index in tainted:  # found by its own probe already
                return tainted[index]
            if index in seen or index >= len(records):
                continue
            seen.add(index)
            budget -= 1
            t = _alive(meta)
            state = finiteness(t) if t is not None else None
            if not state or not (state[0] or state[1]):
                continue
            producer = records[index]
            carried = next((tainted[m._made_by] for m in producer.inputs
                            if m._made_by in tainted), None)
            if carried is not None:  # passed on (through a -inf fill) from an op already found
                return carried
            if posinf_fill and _fills_posinf(producer) and _holds_posinf(t):
                found = (index, meta._slot, t, "Inf")  # a fill asked for the +inf a softmax
                break                                  # turns into NaN: made here
            states = [self._state_of(m) for m in producer.inputs]
            if any(x is None for x in states):
                return None  # an input is gone: where it was made cannot be told
            bad = [m for m, x in zip(producer.inputs, states) if x[0] or x[1]]
            if bad:
                frontier.extend(m for m in bad if m._made_by is not None)
                continue
            if non_finite_literals(producer) or producer.op in UNINITIALISED:
                continue
            if found is None or index < found[0]:
                found = (index, meta._slot, t, "NaN" if state[0] else "Inf")
        if found is None:
            return None
        index, slot, t, kind = found
        where = _first_index(t, kind)
        made = records[index]
        inputs = [_alive(m) for m in made.inputs]
        operands = None if any(x is None for x in inputs) else inputs
        why = POSINF_FILL if posinf_fill and _fills_posinf(made) else \
            cause(made, operands, kind, where)
        made.non_finite = NonFinite(kind, slot, where, cause=why)
        self.tainted[index] = index
        return index

    def _state_of(self, meta, depth: int = 8) -> tuple | None:
        """(holds a NaN, holds an Inf) of the tensor ``meta`` describes: read while it exists;
        once gone (``k.transpose(-2, -1)`` freed after the matmul), the tensor it was moved from
        unchanged, when that one exists and holds neither; else None, unknown."""
        t = _alive(meta)
        if t is not None:
            return finiteness(t)
        index = meta._made_by
        if index is None or depth == 0 or index >= len(self.records):
            return None
        producer = self.records[index]
        if producer.op not in _UNCHANGED or not producer.inputs:
            return None
        state = self._state_of(producer.inputs[0], depth - 1)
        return state if state == (False, False) else None


def _alive(meta) -> Tensor | None:
    """The tensor ``meta`` describes while it still exists (the recorder's weak reference)."""
    ref = meta.ref
    return ref() if callable(ref) else None


#: the cause of an Inf a fill asked for, which a softmax turns into NaN
POSINF_FILL = "a fill with +inf"


def _fills_posinf(rec: OpRecord) -> bool:
    """Whether the call passes +inf itself (``masked_fill(mask, float("inf"))``)."""
    return any(type(a) is float and a == math.inf for a in (*rec.args, *rec.kwargs.values()))


def _holds_posinf(t: Tensor) -> bool:
    try:
        return readable(t) and bool(torch.isposinf(_values(t)).any())
    except Exception:
        return False


def has_value(t: Tensor) -> bool:
    """Real tensors have values; fake ones only when made from a constant (``torch.tensor(13.)``)."""
    return not is_fake(t) or fake_constant(t) is not None


def operands(args, kwargs) -> list[Tensor]:
    """The tensors of a call in the order the tracer numbers them."""
    out: list[Tensor] = []
    for a in args:
        _collect_tensors(a, out)
    for v in kwargs.values():
        _collect_tensors(v, out)
    return out


def _collect_tensors(a, out: list[Tensor]) -> None:
    # A module-level function, not a closure that calls itself: such a closure is a reference
    # cycle, and would keep the operands (attention weights, values) alive until the garbage
    # collector came round.
    if isinstance(a, Tensor):
        out.append(a)
    elif isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
        for x in a:
            _collect_tensors(x, out)


def _values(t: Tensor) -> Tensor:
    """The tensor to reduce in a probe: detached when autograd tracks it, so that the probe
    adds nothing to the graph (and one op less, as under no_grad, when it does not)."""
    return t.detach() if t.requires_grad else t


def readable(t: Tensor) -> bool:
    return t.is_floating_point() and not t.is_meta and not is_fake(t) and t.numel() != 0 \
        and t.layout == torch.strided


def finiteness(t: Tensor, only_nan: bool = False) -> tuple[bool, bool | None] | None:
    """(holds a NaN, holds an Inf) for a floating tensor with values, else None. Two cheap
    reductions at most: a sum, finite unless some element is not (or it overflows), then the
    minimum and maximum, which a NaN turns into NaN and an Inf into +-inf.

    ``only_nan``: the caller asks about NaN alone (the call passed an inf itself, as
    ``masked_fill(mask, -inf)`` does, so an Inf is expected); a sum that is not NaN rules a NaN
    out, and the Inf half of the answer is None."""
    if not readable(t):
        return None
    try:
        x = _values(t)
        total = x.sum().item()
        if math.isfinite(total):
            return False, False
        if only_nan and not math.isnan(total):
            return False, None
        low, high = (v.item() for v in torch.aminmax(x))
        if math.isnan(low) or math.isnan(high):
            return True, False  # whether an Inf is there too no longer matters downstream
        return False, math.isinf(low) or math.isinf(high)
    except Exception:  # under a functorch transform, or a tensor subclass without values
        return None


def _first_index(t: Tensor, kind: str) -> list[int] | None:
    try:
        with torch.no_grad():
            x = t.detach()
            bad = torch.isnan(x) if kind == "NaN" else torch.isinf(x)
            found = torch.nonzero(bad)
            return found[0].tolist() if len(found) else None
    except Exception:
        return None


def non_finite_literals(rec: OpRecord, tainted: dict[int, int] | None = None) -> set[str]:
    """"inf" / "nan" when the call itself passes such a number (a -inf fill value, a full()).
    A one-element input made by an op already found non-finite (``tainted``: a NaN loss
    read by ``-loss``) carries that NaN on; it is not a number the call chose."""
    found: set[str] = set()
    values = [*rec.args, *rec.kwargs.values()] if rec.kwargs else list(rec.args)
    values += [meta.value for meta in rec.inputs
               if not (tainted and meta._made_by in tainted)]
    for a in values:
        if type(a) is float:
            if a != a:
                found.add("nan")
            elif a in (math.inf, -math.inf):
                found.add("inf")
        elif isinstance(a, (list, tuple)):
            values.extend(a)  # nested sizes or fill values; the loop reaches them too
    return found


def _contracted(rec: OpRecord, slot: int) -> tuple[int, ...] | None:
    """The axes of operand ``slot`` that a product sums over, the only ones a rule reads the
    sums of; None when not known here (then the last two and an einsum's are measured)."""
    if rec.op == "torch.einsum":
        axes = _einsum_contracted(rec, slot)
        return axes or None
    pair = matmul_operands(rec)
    if pair is None or slot not in pair or slot >= len(rec.inputs):
        return None
    ndim = rec.inputs[slot].ndim
    if slot == pair[0]:
        return (ndim - 1,) if ndim >= 1 else None
    return (ndim - 2,) if ndim >= 2 else (0,)


def _einsum_contracted(rec: OpRecord, slot: int) -> tuple[int, ...]:
    """The axes of einsum operand ``slot`` that the einsum sums over (none for other ops)."""
    if rec.op != "torch.einsum":
        return ()
    parsed = einsum_terms(rec)
    if parsed is None or slot >= len(rec.inputs):
        return ()
    terms, rhs = parsed
    letters = einsum_letters(terms[slot], rec.inputs[slot].ndim)
    if letters is None:
        return ()
    return tuple(i for i, c in enumerate(letters) if c != "." and c not in rhs)


def weight_sums(t: Tensor, extra: tuple[int, ...] = (),
                only: tuple[int, ...] | None = None) -> WeightSums | None:
    """How far ``t`` is from summing to 1 over each of its last two axes, the ones a matmul
    contracts, and over the ``extra`` axes (those an einsum contracts), and its minimum.
    ``only``: the axes the product sums ``t`` over, when known: those alone are measured."""
    if t.ndim == 0 or not readable(t):
        return None
    try:
        x = _values(t)
        if x.dtype in HALF:
            x = x.float()
        if only is not None:
            axes = sorted(a for a in only if a < x.ndim)
        else:
            axes = sorted({*range(max(x.ndim - 2, 0), x.ndim), *(a for a in extra if a < x.ndim)})
        sums = [x.sum(dim=axis) for axis in axes]
        # The extremes of each axis's sums and the minimum, read back one number at a time
        # (cheaper than stacking a handful of scalars into one tensor to read it in one go).
        extremes = [v.item() for s in sums for v in torch.aminmax(s)]
        return _deviations(axes, sums, extremes, x.amin().item())
    except Exception:  # under a functorch transform, or a tensor subclass without values
        return None


def _deviations(axes: list[int], sums: list[Tensor], extremes: list[float],
                minimum: float) -> WeightSums:
    """:func:`weight_sums` from each axis's sums, their extremes (low, high) and the minimum."""
    deviations = {}
    for axis, s, low, high in zip(axes, sums, extremes[::2], extremes[1::2]):
        if low > 1e-6 or high < -1e-6:
            # No slice sums to 0, so the largest |sum - 1| is at one of the extremes.
            deviations[axis] = max(abs(low - 1), abs(high - 1))
            continue
        off = (s - 1).abs().masked_fill(s.abs() <= 1e-6, 0.0)  # fully masked rows are 0
        deviations[axis] = off.max().item()
    return WeightSums(minimum, deviations)
