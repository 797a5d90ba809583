"""op-failed and noncontiguous-view: an op that raised, explained in named dims; and a failure
no op explains (the forward or script raised in plain Python), as one finding."""

from __future__ import annotations

from itertools import permutations

from ..analysis.facts import Analysis
from ..base.errors import one_line
from ..base.ops import MOVES, PERMUTES, PICKS, PLAIN_MATMULS, base_name, permutation
from ..base.source import binop_operands, call_receiver, user_frame
from ..naming.axes import axis_label, format_axes
from .fixes import perm_call, rename_method, segment, with_fix, with_receiver
from .registry import diagnostic


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _made_noncontiguous(analysis: Analysis, meta):
    """The record whose output first stopped being contiguous, following the tensor back."""
    found = None
    while meta is not None and meta.src is not None:
        producer = analysis.records[meta.src[0]]
        out = producer.outputs[meta.src[1]]
        if out.contiguous:
            break
        found = producer
        meta = producer.inputs[0] if producer.inputs else None
        if meta is not None and meta.contiguous:
            break
    return found


def _fixed_layout(rec) -> bool:
    """Whether an op's output strides follow from what it does, on every backend (a transpose,
    a slice, a view), rather than from the kernel that ran (an einsum, a matmul, attention)."""
    return rec.op in MOVES or base_name(rec.op) in PICKS


def _noncontiguous(analysis: Analysis, rec):
    meta = rec.inputs[0]
    maker = _made_noncontiguous(analysis, meta)
    receiver = call_receiver(rec.source) or "the tensor"
    shape = analysis.shape_of(meta)
    if maker is not None:
        where = f"{maker.op.split('.')[-1]} at line {maker.line}" if maker.line else maker.op
        why = f"{receiver} {shape} is not contiguous since the {where} ({maker.source})"
    else:
        why = f"{receiver} {shape} is not contiguous in memory"
    message = f"view of a non-contiguous tensor: {why}; .view never copies"
    # On fake tensors (--fake) the strides of a kernel's output are torch's prediction for
    # one backend; only a layout that follows from the ops themselves is a fact.
    predicted = analysis.shapes_only and (maker is None or not _fixed_layout(maker))
    if predicted:
        made = f"the {maker.op.split('.')[-1]}'s" if maker is not None else "its"
        message += (f". Predicted, not seen: under --fake {made} strides are torch's prediction "
                    f"for one backend; the backend you run on chooses its own layout, may give "
                    f"a contiguous tensor, and then the view runs")
    hint = "Use .reshape(...), or call .contiguous() before .view(...)."
    if predicted:
        hint = "Use .reshape(...), which works whatever the layout, or call .contiguous() first."
    seg = segment(rec)
    fix = rename_method(seg, "reshape") if seg is not None else None
    return diagnostic("noncontiguous-view", message, with_fix(hint, fix), rec=rec,
                      variant="predicted" if predicted else None,
                      made_by=maker.index if maker is not None else None,
                      fix=fix.data() if fix else None)


def _matmul_hint(analysis: Analysis, rec):
    """(the operands in words, the hint, the corrected line or None)."""
    a, b = rec.inputs[0], rec.inputs[1]
    sa, sb = analysis.shape_of(a), analysis.shape_of(b)
    operands = binop_operands(rec.source) or ("the left operand", "the right operand")
    left, right = operands
    text = f"{left} is {sa} and {right} is {sb}"
    hint = ""
    if a.ndim >= 1 and b.ndim >= 2:
        k = a.shape[-1]
        if b.shape[-2] != k:
            if b.shape[-1] == k:
                hint = f"{right} has the contracted axis last: transpose its last two axes (.transpose(-2, -1))."
            elif k in b.shape:
                hint = (f"the contracted axis of {right} must be second to last: "
                        f"move axis {b.shape.index(k)} there, e.g. with .transpose(-2, -1) on the original tensor.")
            else:
                hint = f"the last axis of {left} must match the second-to-last axis of {right}."
        else:
            hint = "the leading (batch) axes must be equal or 1 to broadcast."
    producer = analysis.records[b.src[0]] if b.src is not None else None
    if producer is not None and producer.op in ("Tensor.transpose", "torch.transpose") and b.ndim > 2:
        hint = f"transpose the last two axes: {call_receiver(producer.source) or 'k'}.transpose(-2, -1)."
    for slot, name in ((1, right), (0, left)):
        found = _operand_fix(analysis, rec, slot, name)
        if found is not None:
            return text, *found
    return text, hint[:1].upper() + hint[1:] if hint else "", None


def _layouts(meta, other, slot: int) -> list[tuple[int, ...]]:
    """The orders of ``meta``'s axes that would make the product work (identity excluded)."""
    n = meta.ndim
    if n < 2 or n > 6 or other.ndim < 2:
        return []
    found = []
    for order in permutations(range(n)):
        if order == tuple(range(n)):
            continue
        shape = tuple(meta.shape[i] for i in order)
        inner = shape[-2] == other.shape[-1] if slot == 1 else shape[-1] == other.shape[-2]
        if not inner:
            continue
        mine, theirs = shape[:-2], other.shape[:-2]
        if all(x == y or x == 1 or y == 1 for x, y in zip(reversed(mine), reversed(theirs))):
            found.append(order)
    shapes = {tuple(meta.shape[i] for i in o) for o in found}
    return found if len(shapes) == 1 else []  # ambiguous: say nothing


def _operand_fix(analysis: Analysis, rec, slot: int, name: str):
    """When operand ``slot`` only has its axes in the wrong order, the fix where it was made:
    the line of the op that made it (``v`` split into heads but never transposed)."""
    meta, other = rec.inputs[slot], rec.inputs[1 - slot]
    orders = _layouts(meta, other, slot)
    if len(orders) != 1 or meta.src is None:
        return None
    order = orders[0]
    producer = analysis.records[meta.src[0]]
    if producer.error is not None or producer.internal or producer.line is None:
        return None
    seg = segment(producer)
    if seg is None:
        return None
    before = permutation(producer) if producer.op in PERMUTES else None
    if before is not None and len(before) == len(order):
        composed = tuple(before[i] for i in order)
        then = "" if composed == tuple(range(len(composed))) else perm_call(composed)
        fix = with_receiver(seg, then)
    else:
        then = perm_call(order)
        fix = seg.insert_after(seg.node, then)
    if fix is None:
        return None
    wanted = analysis.shape_of(meta)
    shape = _shape_in(analysis, meta, order)
    made = "" if producer.line == rec.line else f", made so at line {producer.line}"
    advice = ("transpose the last two axes" if then == ".transpose(-2, -1)" else
              f"use {then}" if then else "leave its axes as they were")
    return (f"{name} is {wanted}{made}; the product needs {shape}, so {advice}: {fix.shown()}",
            fix)


def _shape_in(analysis: Analysis, meta, order) -> str:
    if meta.axes:
        return format_axes(tuple(meta.axes[i] for i in order), analysis.dims)
    return str(tuple(meta.shape[i] for i in order))


def _op_failed(analysis: Analysis, rec):
    kind, text = rec.error
    shapes = ", ".join(analysis.shape_of(m) for m in rec.inputs)
    hint, fix = "", None
    if rec.op in PLAIN_MATMULS and len(rec.inputs) >= 2:
        operands, hint, fix = _matmul_hint(analysis, rec)
        message = f"{rec.op} failed: {operands} ({kind}: {_first_line(text)})"
    else:
        message = f"{rec.op} failed on {shapes or 'its arguments'}: {kind}: {_first_line(text)}"
        if rec.op in _JOINS:
            hint, fix = _join_hint(analysis, rec), None
    return diagnostic("op-failed", message, hint, rec=rec, exception=kind,
                      fix=fix.data() if fix else None)


_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})


def _join_hint(analysis: Analysis, rec) -> str:
    """For a cat whose pieces differ in exactly one axis other than the one it joins along
    (a KV cache appended over the heads instead of the time axis): join along that axis."""
    metas = rec.inputs
    if len(metas) < 2 or len({m.ndim for m in metas}) != 1:
        return ""
    n = metas[0].ndim
    dim = rec.arg(1, "dim", 0)
    if not isinstance(dim, int) or not -n <= dim < n:
        return ""
    dim %= n
    differ = [i for i in range(n) if len({m.shape[i] for m in metas}) > 1]
    if rec.op == "torch.stack":
        return ("torch.stack needs tensors of one shape; use torch.cat to join along an "
                "existing axis.") if differ else ""
    others = [i for i in differ if i != dim]
    if len(others) != 1:
        return ""
    axis = others[0]
    label = axis_label(metas[0].axes[axis], analysis.dims) if metas[0].axes else f"axis {axis}"
    negative = axis - n
    return (f"The pieces differ only in axis {axis} ({label} vs "
            f"{', '.join(str(m.shape[axis]) for m in metas[1:])}), so they join along it: "
            f"dim={negative if dim < 0 or negative >= -2 else axis}, not dim={rec.arg(1, 'dim', 0)}.")


def _is_noncontiguous_view(rec) -> bool:
    return (rec.op == "Tensor.view" and rec.inputs and not rec.inputs[0].contiguous
            and ("view size is not compatible" in rec.error[1]
                 or "Cannot view a tensor" in rec.error[1]))  # the fake-tensor wording


def check_failed(analysis: Analysis):
    for rec in analysis.records:
        if rec.error is None:
            continue
        jumble = analysis.reshape(rec)
        if jumble is not None and not jumble.ok:
            continue  # reshape-jumble says more than the error does
        if _is_noncontiguous_view(rec):
            continue
        yield _op_failed(analysis, rec)


def check_noncontiguous(analysis: Analysis):
    for rec in analysis.records:
        if rec.error is None or not _is_noncontiguous_view(rec):
            continue
        jumble = analysis.reshape(rec)
        if jumble is not None and not jumble.ok:
            continue
        yield _noncontiguous(analysis, rec)


def raised_findings(records, exc: BaseException, found: list, *, what: str = "forward",
                    in_module: bool = True) -> list:
    """What ``exc`` (the exception that ended a run) says that no trace rule said (``found``:
    the rules' findings): an annotation violation (``annotation-mismatch``), or a plain Python
    error at the user's line (``op-failed``); nothing when a rule already explained the op that
    raised. ``what`` raised (a forward, a script); ``in_module``: the finding names the module
    that ran last."""
    from .annotations import annotation_diagnostic

    diag = annotation_diagnostic(exc)
    if diag is not None:
        return [diag]
    failed = next((r for r in reversed(records) if r.error is not None), None)
    if failed is not None and any(failed.index in (d.record, *d.more_records) for d in found):
        return []
    site = user_frame(exc)
    where = dict(file=site[0] if site else None, line=site[1] if site else None)
    if in_module:
        where["module"] = records[-1].module if records else None
    return [diagnostic("op-failed", f"{what} raised {type(exc).__name__}: {one_line(exc)}",
                       **where)]
