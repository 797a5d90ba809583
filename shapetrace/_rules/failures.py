"""op-failed and noncontiguous-view: an op that raised, explained in named dims."""

from __future__ import annotations

from .._analysis import Analysis
from .._ops import PLAIN_MATMULS
from .._source import binop_operands, call_receiver
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
    hint = "Use .reshape(...), or call .contiguous() before .view(...)."
    return diagnostic("noncontiguous-view", message, hint, rec=rec,
                      made_by=maker.index if maker is not None else None)


def _matmul_hint(analysis: Analysis, rec) -> tuple[str, str]:
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
    return text, hint[:1].upper() + hint[1:] if hint else ""


def _op_failed(analysis: Analysis, rec):
    kind, text = rec.error
    shapes = ", ".join(analysis.shape_of(m) for m in rec.inputs)
    hint = ""
    if rec.op in PLAIN_MATMULS and len(rec.inputs) >= 2:
        operands, hint = _matmul_hint(analysis, rec)
        message = f"{rec.op} failed: {operands} ({kind}: {_first_line(text)})"
    else:
        message = f"{rec.op} failed on {shapes or 'its arguments'}: {kind}: {_first_line(text)}"
    return diagnostic("op-failed", message, hint, rec=rec, exception=kind)


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
