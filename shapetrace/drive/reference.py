"""Compare a module with the reference implementation an instructor named (``reference-mismatch``).

Both are built at the probe sizes, the reference gets the module's weights
(``drive.reference_weights``), both run in eval mode on copies of the same inputs, in float64 (float32
when one of them cannot run in float64), each under the tracer with a snapshot of every floating
output. When the outputs differ beyond float tolerance, the finding names the first op where the
two computations part:

* a value of the module *matches* a value of the reference when it holds the same numbers in the
  same layout (the same shape, or a split/merge of the same axes: (B*H, T, d) against
  (B, H, T, d));
* walking back from the module's output through values that match nothing, the walk stops at
  ops whose inputs all match: there the module computes something the reference never does;
  the earliest such op is where the traces part;
* its counterpart is the nearest op of the reference downstream of the same inputs with an
  output of that layout (an op of the same kind first), and comparing the two says how they
  differ: masked differently, a scale factor, transposed, reordered along an axis, the same
  values arranged differently, or simply different values.

When no op can be singled out, the finding is about the outputs only: it says less rather than
something false.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from ..base.diagnostics import Diagnostic
from ..base.dims import Dims
from ..base.errors import ShapetraceError, TargetError, UsageError
from ..base.names import AXIS_CONTENTS
from ..base.ops import (
    DIVS,
    MASKED_FILLS,
    MATMULS,
    MULS,
    PERMUTES,
    RESHAPES,
    SOFTMAXES,
    WHERES,
    base_name,
    display_name,
)
from ..rules.registry import diagnostic
from .reference_weights import plan_weights

RTOL = {torch.float64: 1e-7, torch.float32: 1e-4}
_MAX_VALUES = 2_000_000  # numbers kept per run for locating the parting op


@dataclass
class Reference:
    """The reference: a class (built like the module) or an instance (copied), and its name."""

    module: object
    display: str


def resolve_reference(reference, *, root=None, like: type | None = None) -> Reference:
    """A ``Reference`` from a TARGET string (a file with several classes: the one named like
    ``like``), an nn.Module subclass or an instance."""
    if isinstance(reference, Reference):
        return reference
    if isinstance(reference, str):
        from .targets import resolve_targets

        targets = resolve_targets(reference, root=root)
        if len(targets) > 1:
            named = [t for t in targets if like is not None and t.cls.__name__ == like.__name__]
            if len(named) != 1:
                raise UsageError(f"reference {reference!r} defines {len(targets)} modules; name "
                                 f"one: {reference.strip()}::{targets[0].cls.__qualname__}")
            targets = named
        return Reference(targets[0].cls, targets[0].display)
    if isinstance(reference, type) and issubclass(reference, torch.nn.Module):
        return Reference(reference, reference.__qualname__)
    if isinstance(reference, torch.nn.Module):
        return Reference(reference, type(reference).__qualname__)
    raise UsageError(f"reference must be a TARGET string, an nn.Module subclass or an instance, "
                     f"got {type(reference).__name__}")


@dataclass
class _Run:
    records: list
    values: dict  # (record index, slot) -> snapshot
    outputs: list[Tensor]
    output_keys: list  # (record index, slot) of each output, or None
    analysis: object


def compare(model, args, reference: Reference, *, init, dims: Dims, seed: int,
            student: str) -> tuple[list[Diagnostic], list[str], str | None]:
    """``reference-mismatch`` findings and notes for ``model`` (built, traced once already) on
    ``args``, and why the comparison could not run (None when it ran). Raises TargetError when
    the reference cannot be built or given the weights."""
    ref_model = _build_reference(reference, init, dims, seed)
    plan = plan_weights(model, ref_model, heads=dims["H"], names=(student, reference.display))
    notes = [f"compared with the reference {reference.display}, weights matched "
             f"{plan.describe()}"]
    for dtype in (torch.float64, torch.float32):
        if dtype is torch.float32:  # float64 failed: a fresh reference, as its run may have
            ref_model = _build_reference(reference, init, dims, seed)  # changed its state
        try:
            found = _compare_as(dtype, model, ref_model, plan, args, dims, reference)
        except _CannotRun as exc:
            if dtype is torch.float64:
                continue
            if exc.side == "reference":
                raise TargetError(f"the reference {reference.display} raised {exc.message}") \
                    from None
            why = f"your module raised {exc.message} when run again"
            return [], [*notes, f"reference comparison skipped: {why}"], why
        return found, notes, None
    return [], notes, None  # pragma: no cover - the loop returns


class _CannotRun(Exception):
    def __init__(self, side: str, exc: BaseException):
        text = str(exc).strip().splitlines()
        self.side = side
        self.message = f"{type(exc).__name__}: {text[0] if text else ''}"
        super().__init__(self.message)


def _build_reference(reference: Reference, init, dims: Dims, seed: int):
    from ..behaviour.runs import seed as seed_all
    from .infer import infer_init

    if isinstance(reference.module, torch.nn.Module):
        return copy.deepcopy(reference.module)
    cls = reference.module
    try:
        kwargs = infer_init(cls, dims, given=_accepted(cls, init or {}))
    except ShapetraceError as exc:
        raise TargetError(f"reference {reference.display}: {exc}") from None
    seed_all(seed)
    try:
        return cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the instructor's constructor: one line
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        text = str(exc).strip().splitlines()
        raise TargetError(f"reference {cls.__qualname__}({shown}) raised {type(exc).__name__}: "
                          f"{text[0] if text else ''}") from None


def _accepted(cls, init: Mapping) -> dict:
    """The module's constructor arguments that the reference's constructor also takes."""
    import inspect

    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(init)
    return {k: v for k, v in init.items() if k in params}


def _compare_as(dtype, model, ref_model, plan, args, dims: Dims, reference) -> list[Diagnostic]:
    """Findings from one comparison in ``dtype``; raises _CannotRun when a side raises.
    ``ref_model`` is the comparison's own (built or copied for it) and is used in place; the
    module is copied."""
    mine = copy.deepcopy(model).to(dtype).eval()
    theirs = ref_model.to(dtype).eval()
    inputs = [a.detach().to(dtype) if isinstance(a, Tensor) and a.is_floating_point() else a
              for a in args]
    rtol = RTOL[dtype]
    for layout in plan.layouts:  # fused weights: the module is right if any layout agrees
        plan.load(mine, theirs, layout, dims["H"])
        if _outputs_agree(_call("student", mine, inputs), _call("reference", theirs, inputs),
                          rtol):
            return []
    plan.load(mine, theirs, plan.layouts[0], dims["H"])
    mine_run = _record("student", mine, inputs, dims)
    their_run = _record("reference", theirs, inputs, dims)
    return [_finding(mine_run, their_run, rtol, dims, reference, plan)]


def _fresh(inputs):
    return [a.clone() if isinstance(a, Tensor) else a for a in inputs]


def _call(side: str, model, inputs) -> list[Tensor]:
    from ..behaviour.runs import math_sdpa

    try:
        with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _tensors(model(*_fresh(inputs)))
    except Exception as exc:  # noqa: BLE001 - either side's own failure
        raise _CannotRun(side, exc) from None


def _tensors(out) -> list[Tensor]:
    from ..behaviour.runs import flatten

    return [t for _, _, t in flatten(out) if t.is_floating_point()]


def _record(side: str, model, inputs, dims: Dims) -> _Run:
    """One traced forward that keeps a snapshot of every floating output."""
    from ..analysis.facts import analyse
    from ..base.records import TraceData
    from ..behaviour.runs import math_sdpa
    from ..record.tracer import Recorder

    values: dict = {}
    made: dict = {}
    kept = [0]

    def keep(rec, outs, op_args, op_kwargs) -> None:
        for slot, t in enumerate(outs):
            if t.is_floating_point() and kept[0] + t.numel() <= _MAX_VALUES:
                values[(rec.index, slot)] = t.detach().clone()
                kept[0] += t.numel()
            made[id(t)] = (rec.index, slot)

    trace = TraceData(dims)
    fresh = _fresh(inputs)  # copied before recording: the copies are no op of either side
    try:
        with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Recorder(trace, model, probes=False, observer=keep):
                out = model(*fresh)
    except Exception as exc:  # noqa: BLE001
        raise _CannotRun(side, exc) from None
    from ..behaviour.runs import flatten

    outputs = [t for _, _, t in flatten(out) if t.is_floating_point()]
    keys = [made.get(id(t)) for t in outputs]
    return _Run(trace.records, values, [t.detach() for t in outputs], keys, analyse(trace))


# --- closeness ---------------------------------------------------------------------------------

def _close(a: Tensor, b: Tensor, rtol: float) -> bool:
    """Equal within ``rtol`` of the larger magnitude, with infinities and NaNs in the same places."""
    if a.shape != b.shape:
        return False
    finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
    if not torch.equal(finite_a, finite_b):
        return False
    if not torch.equal(a[~finite_a].nan_to_num(0.0), b[~finite_b].nan_to_num(0.0)):
        return False
    fa, fb = a[finite_a], b[finite_b]
    if fa.numel() == 0:
        return True
    scale = max(float(fa.abs().max()), float(fb.abs().max()), 1e-30)
    return bool(((fa - fb).abs() <= rtol * scale + rtol * fb.abs()).all())


def _outputs_agree(mine: list[Tensor], theirs: list[Tensor], rtol: float) -> bool:
    if not mine or not theirs:
        return not mine and not theirs
    return all(_close(a, b, rtol) for a, b in zip(mine, theirs))


def _factors(shape) -> tuple[int, ...]:
    """The prime factors of each size in order: two layouts with the same factors are a split
    or merge of the same axes (the probe sizes are distinct primes)."""
    out = []
    for size in shape:
        n, p = int(size), 2
        while n > 1 and p * p <= n:
            while n % p == 0:
                out.append(p)
                n //= p
            p += 1
        if n > 1:
            out.append(n)
    return tuple(out)


def _same_values(a: Tensor, b: Tensor, rtol: float) -> bool:
    if a.numel() != b.numel() or _factors(a.shape) != _factors(b.shape):
        return False
    return _close(a.reshape(b.shape), b, rtol)


# --- where the traces part ---------------------------------------------------------------------

def _matches(mine: _Run, theirs: _Run, rtol: float) -> dict:
    """For each of the module's values, a reference value with the same numbers, or None."""
    by_size: dict = {}
    for key, t in theirs.values.items():
        by_size.setdefault((t.numel(), _factors(t.shape)), []).append(key)
    found = {}
    for key, t in mine.values.items():
        found[key] = next((k for k in by_size.get((t.numel(), _factors(t.shape)), ())
                           if _same_values(t, theirs.values[k], rtol)), None)
    return found


def _parting(mine: _Run, matched: dict):
    """The earliest op reached back from an unmatched output whose inputs all match."""
    starts = [k for k in mine.output_keys if k is not None and matched.get(k, 0) is None]
    frontier, seen = [], set()
    while starts:
        key = starts.pop()
        if key in seen:
            continue
        seen.add(key)
        rec = mine.records[key[0]]
        unmatched = [m.src for m in rec.inputs
                     if m.src is not None and m.src in matched and matched[m.src] is None]
        if unmatched:
            starts.extend(unmatched)
        else:
            frontier.append(rec)
    fed = [r for r in frontier if any(m.dtype is not None and m.dtype.is_floating_point
                                      for m in r.inputs)]
    chosen = fed or frontier
    return min(chosen, key=lambda r: r.index) if chosen else None


def _counterparts(rec, mine: _Run, theirs: _Run, matched: dict, key) -> list:
    """Reference values to compare ``rec``'s output ``key`` with, best first: outputs of the
    same layout from ops downstream of the counterparts of ``rec``'s inputs (ops of the same
    kind first), then those input counterparts themselves (for an op the reference lacks)."""
    consumers: dict = {}
    for r in theirs.records:
        for m in r.inputs:
            if m.src is not None:
                consumers.setdefault(m.src[0], []).append(r.index)
    inputs = [matched[m.src] for m in rec.inputs
              if m.src is not None and matched.get(m.src) is not None]
    if inputs:
        frontier = [c for s in inputs for c in consumers.get(s[0], ())]
    else:  # only the module's inputs and weights went in: start from the reference's
        frontier = [r.index for r in theirs.records
                    if r.inputs and all(m.src is None for m in r.inputs)]
    target = mine.values[key]

    def fits(k) -> bool:
        t = theirs.values.get(k)
        return t is not None and t.numel() == target.numel() \
            and _factors(t.shape) == _factors(target.shape)

    hits, seen = [], set()
    for _depth in range(8):
        frontier = [i for i in sorted(set(frontier)) if i not in seen]
        seen.update(frontier)
        hits += [(i, slot) for i in frontier for slot in range(len(theirs.records[i].outputs))
                 if fits((i, slot))]
        frontier = [c for i in frontier for c in consumers.get(i, ())]
        if not frontier:
            break
    family = _family(rec.op)
    same = [h for h in hits if _family(theirs.records[h[0]].op) == family]
    others = [h for h in hits if h not in same]
    if family != "mask":  # a masking op of the reference is no counterpart to another kind
        others = [h for h in others if _family(theirs.records[h[0]].op) != "mask"]
    ordered = same + [k for k in inputs if fits(k)] + others
    if key in mine.output_keys:  # the module's output: the reference's own output first
        slot = mine.output_keys.index(key)
        theirs_out = theirs.output_keys[slot] if slot < len(theirs.output_keys) else None
        if theirs_out is not None and fits(theirs_out):
            ordered.insert(0, theirs_out)
    return list(dict.fromkeys(ordered))


def _family(op: str) -> str:
    if op in SOFTMAXES:
        return "softmax"
    if op in MULS or op in DIVS:
        return "scale"
    if op in MASKED_FILLS or op in WHERES:
        return "mask"
    if op in RESHAPES or op in PERMUTES:
        return "layout"
    if op in MATMULS or base_name(op) in ("einsum", "linear"):
        return "product"
    return base_name(op)


# --- the finding -------------------------------------------------------------------------------

def _finding(mine: _Run, theirs: _Run, rtol: float, dims: Dims, reference: Reference,
             plan) -> Diagnostic:
    hint = (f"Run yours and {reference.display} on the same input and compare the tensors at "
            f"these lines (weights matched {plan.describe()}).")
    data = {"reference": reference.display}
    matched = _matches(mine, theirs, rtol)
    rec = _parting(mine, matched)
    if rec is not None:
        key = next(k for k in ((rec.index, s) for s in range(len(rec.outputs)))
                   if k in matched and matched[k] is None)
        shape = mine.analysis.shape_of(rec.outputs[key[1]])
        found = _pick_counterpart(mine.values[key], theirs, _counterparts(rec, mine, theirs,
                                                                          matched, key), rtol, dims)
        if found is not None:
            ref_key, why = found
            ref_rec = theirs.records[ref_key[0]]
            ref_shape = theirs.analysis.shape_of(ref_rec.outputs[ref_key[1]])
            ref_file = ref_rec.file
            data.update(reference_file=ref_file, reference_line=ref_rec.line,
                        reference_op=ref_rec.op)
            message = (f"your {shape} at line {rec.line} ({_shown_op(rec)}) differs from the "
                       f"reference's {ref_shape} at its line {ref_rec.line} ({_shown_op(ref_rec)}"
                       f"{', ' + ref_file if ref_file else ''}): {why}")
        else:
            message = (f"your {shape} at line {rec.line} ({_shown_op(rec)}) is where your values "
                       f"part from the reference's: it is computed from values the reference "
                       f"also has, but matches none of its own; "
                       f"{_output_difference(mine, theirs, rtol, dims)}")
        return diagnostic("reference-mismatch", message, hint, rec=rec, **data)
    out_rec = next((mine.records[k[0]] for k in mine.output_keys if k is not None), None)
    message = f"your output differs from the reference's: {_output_difference(mine, theirs, rtol, dims)}"
    return diagnostic("reference-mismatch", message, hint, rec=out_rec, **data)


def _pick_counterpart(a: Tensor, theirs: _Run, candidates: list, rtol, dims):
    """The first candidate whose difference has a name (a scale, a mask, an order), else the
    first one with the plain difference; ``(key, explanation)`` or None."""
    for key in candidates[:8]:
        b = theirs.values[key]
        rec = theirs.records[key[0]]
        names = _axis_names(theirs.analysis.shape_of(rec.outputs[key[1]]))
        why = explain(a.reshape(b.shape), b, names, rtol, dims, plain=False)
        if why:
            return key, why
    if not candidates:
        return None
    key = candidates[0]
    b = theirs.values[key]
    return key, explain(a.reshape(b.shape), b, [], rtol, dims)


def _shown_op(rec) -> str:
    return display_name(rec.op, rec.source)


def _output_difference(mine: _Run, theirs: _Run, rtol: float, dims: Dims) -> str:
    if not mine.outputs or not theirs.outputs:
        return "one of the two returns no floating tensor"
    a, b = mine.outputs[0], theirs.outputs[0]
    label = lambda t: "(" + ", ".join(dims.label(s) for s in t.shape) + ")"  # noqa: E731
    if a.numel() != b.numel() or _factors(a.shape) != _factors(b.shape):
        return f"your output is {label(a)}, the reference's {label(b)}"
    if len(mine.outputs) != len(theirs.outputs) and _close(a.reshape(b.shape), b, rtol):
        return (f"yours returns {len(mine.outputs)} tensors, the reference {len(theirs.outputs)}, "
                f"and the first agree")
    names = [dims.label(s) for s in b.shape]
    return f"the outputs {label(b)} differ: {explain(a.reshape(b.shape), b, names, rtol, dims)}"


def _axis_names(shape: str) -> list[str]:
    return [part.strip() for part in shape.strip("()").split(",") if part.strip()]


def explain(a: Tensor, b: Tensor, names: list[str], rtol: float, dims: Mapping[str, int], *,
            plain: bool = True) -> str | None:
    """How ``a`` (the module's) differs from ``b`` (the reference's), in words, saying only what
    the numbers show; without ``plain``, None when no named reason fits."""
    names = names if len(names) == a.ndim else [str(s) for s in a.shape]
    a, b = a.double(), b.double()  # a float32 placeholder against float64 values compares too
    for reason in (_masking, _scale, _transposed, _reordered, _rearranged, _positions):
        text = reason(a, b, names, rtol, dims)
        if text:
            return text
    if not plain:
        return None
    finite = torch.isfinite(a) & torch.isfinite(b)
    if not finite.any():
        return "the values differ"
    gap = float((a[finite] - b[finite]).abs().max())
    size = float(b[finite].abs().max())
    return f"the values differ (by up to {gap:.3g} where the reference's reach {size:.3g})"


def _masked(t: Tensor, probabilities: bool) -> Tensor:
    if probabilities:
        return t == 0
    return (t == -math.inf) | (t <= -1e4)


def _masking(a, b, names, rtol, dims):
    probabilities = bool((a >= 0).all() and (b >= 0).all())
    ma, mb = _masked(a, probabilities), _masked(b, probabilities)
    if torch.equal(ma, mb):
        return None
    only_ref, only_mine = mb & ~ma, ma & ~mb
    parts = []
    if only_ref.any():
        parts.append(f"the reference masks {int(only_ref.sum())} positions that yours does not"
                     f"{_triangle(only_ref, names)}")
    if only_mine.any():
        parts.append(f"yours masks {int(only_mine.sum())} positions that the reference does not"
                     f"{_triangle(only_mine, names)}")
    both = ~ma & ~mb
    if not probabilities and not _close(a[both], b[both], rtol):
        parts.append("and the other values differ too")
    return "; ".join(parts)


def _triangle(where: Tensor, names) -> str:
    if where.ndim < 2 or where.shape[-1] != where.shape[-2]:
        return ""
    n = where.shape[-1]
    upper = torch.ones(n, n, dtype=torch.bool).triu(1)
    if torch.equal(where, upper.expand_as(where)):
        return f" (later tokens: above the diagonal of ({names[-2]}, {names[-1]}))"
    return ""


def _scale(a, b, names, rtol, dims):
    finite = torch.isfinite(a) & torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), torch.isfinite(b)) or not finite.any():
        return None
    fa, fb = a[finite], b[finite]
    denominator = float((fb * fb).sum())
    if denominator == 0:
        return None
    c = float((fa * fb).sum()) / denominator
    if abs(c - 1) < 1e-3 or c == 0 or not _close(fa, c * fb, max(rtol, 1e-6)):
        return None
    return f"yours is {_factor_name(c, dims)} times the reference's"


def _factor_name(c: float, dims: Mapping[str, int]) -> str:
    shown = f"{c:.4g}"
    named = [n for n in ("d", "C", "H", "T", "S", "B") if n in dims]
    candidates = []
    for x in named:
        candidates += [(f"sqrt({x})", math.sqrt(dims[x])), (f"1/sqrt({x})", dims[x] ** -0.5),
                       (x, dims[x]), (f"1/{x}", 1 / dims[x])]
        for y in named:
            if x != y:
                candidates += [(f"sqrt({x}/{y})", math.sqrt(dims[x] / dims[y])),
                               (f"{x}/{y}", dims[x] / dims[y])]
    for text, value in candidates:
        if abs(value - c) <= 1e-4 * abs(c):
            return f"{text} = {shown}"
    return shown


def _transposed(a, b, names, rtol, dims):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or not _close(a, b.transpose(-1, -2), rtol):
        return None
    return f"transposed: its last two axes ({names[-2]}, {names[-1]}) are swapped"


def _reordered(a, b, names, rtol, dims):
    for axis in range(a.ndim):
        n = a.shape[axis]
        if n < 2:
            continue
        rows_a = a.movedim(axis, 0).reshape(n, -1)
        rows_b = b.movedim(axis, 0).reshape(n, -1)
        dist = torch.cdist(rows_a.nan_to_num(0.0, 0.0, 0.0), rows_b.nan_to_num(0.0, 0.0, 0.0))
        order = dist.argmin(1)
        if len(set(order.tolist())) != n or torch.equal(order, torch.arange(n)):
            continue
        if _close(rows_a, rows_b[order], rtol):
            return f"the {_plural(names[axis])} are in a different order (the same {_plural(names[axis])}, permuted along {names[axis]})"
    return None


def _rearranged(a, b, names, rtol, dims):
    import itertools

    axes = [i for i in range(a.ndim) if a.shape[i] > 1]
    for k in range(2, len(axes) + 1):
        for group in itertools.combinations(axes, k):
            rest = [i for i in range(a.ndim) if i not in group]
            flat_a = a.permute(*rest, *group).reshape(*[a.shape[i] for i in rest], -1)
            flat_b = b.permute(*rest, *group).reshape(*[b.shape[i] for i in rest], -1)
            if _close(flat_a.sort(-1).values, flat_b.sort(-1).values, rtol):
                shown = ", ".join(names[i] for i in group)
                words = " and ".join(_plural(names[i]) for i in group)
                return (f"the same values, arranged differently across ({shown}): the {words} "
                        f"are mixed up")
    return None


def _positions(a, b, names, rtol, dims):
    """Along the first token axis: which positions agree, when only the first or last does."""
    T = dims.get("T")
    axis = next((i for i, name in enumerate(names) if name == "T"), None)
    if T is None or axis is None or a.shape[axis] < 3:
        return None
    agree = [_close(a.select(axis, t), b.select(axis, t), rtol) for t in range(a.shape[axis])]
    if agree == [False] * (len(agree) - 1) + [True]:
        return ("they agree only at the last token: as when one of the two lets each token see "
                "later tokens and the other does not")
    if agree == [True] + [False] * (len(agree) - 1):
        return "they agree only at the first token: the values differ from the second token on"
    return None


def _plural(name: str) -> str:
    return AXIS_CONTENTS.get(name, f"{name} entries")
