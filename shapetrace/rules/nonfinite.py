"""non-finite: the first op that turns finite inputs into NaN or Inf, and why.

The value probes (``record.probes``) mark, while the values exist, each op whose output holds a
NaN or an Inf that its inputs did not (``NonFinite``, origin None), with the kind read from the
numbers there (``NonFinite.cause``, ``record.causes``: an overflow, 0/0, a division by 0, a log
of 0, every key of a softmax row masked), and every op that passes one on (``origin``). The rule
reports the first origin whose NaN or Inf reaches what the traced code keeps, at its own line:
an overflow in ``q @ k.transpose(-2, -1)`` at the product, not at the softmax it turns to NaN.
"""

from __future__ import annotations

import math

import torch

from ..analysis.facts import Analysis
from ..base.ops import SOFTMAXES
from .registry import diagnostic


def _reaches_output(analysis: Analysis, origin: int, carriers: list) -> bool:
    """Whether the NaN or Inf made by record ``origin`` reaches what the traced code keeps: a
    tensor no recorded op reads that is returned or still alive at the end (a module's output,
    a loss), or a read that turns it into a Python number (``.item()``, ``.backward()``).
    A NaN that every later op drops (a ``where``, a cast to integers) does not."""
    consumers = analysis.graph.consumers
    for rec in carriers:
        slot = rec.non_finite.slot
        if slot >= len(rec.outputs):
            continue
        readers = consumers.get((rec.index, slot), ())
        if not readers:
            meta = rec.outputs[slot]
            if meta.used or meta.ref:
                return True
            continue
        if any(not r.outputs and r.error is None for r, _ in readers):
            return True
    return False


def check_non_finite(analysis: Analysis):
    carried: dict[int, list] = {}
    origins = []
    for rec in analysis.records:
        found = rec.non_finite
        if found is None or rec.error is not None:
            continue
        if found.origin is None:
            origins.append(rec)
            carried.setdefault(rec.index, []).append(rec)
        else:
            carried.setdefault(found.origin, []).append(rec)
    for rec in origins:
        if _reaches_output(analysis, rec.index, carried[rec.index]):
            yield _non_finite(analysis, rec, carried[rec.index])
            return  # the first one only: everything after it inherits the NaN


def _non_finite(analysis: Analysis, rec, carriers: list):
    kind, slot, where, _, why = rec.non_finite
    out = analysis.shape_of(rec.outputs[slot]) if slot < len(rec.outputs) else "its output"
    name = rec.op.split(".")[-1]
    at_index = f" at index {tuple(where)}" if where is not None else ""
    if why == "every key masked":
        row = tuple(where[:-1]) if where is not None else ()
        message = (f"{name} made {kind}: row {row} of {out} has no finite score (every key "
                   f"masked with -inf), and a softmax over nothing is 0/0")
        hint = ("Make sure every query can see at least one key (check padding and causal "
                "masks), or mask with torch.finfo(scores.dtype).min instead of -inf.")
        return diagnostic("non-finite", message, hint, rec=rec, kind=kind, where=where, cause=why)
    inputs = ", ".join(analysis.shape_of(m) for m in rec.inputs) or "no tensor inputs"
    shown = "-Inf" if why == "log of 0" else kind
    message = f"{name} made {shown}{at_index} of its output {out}, from inputs {inputs} that held none"
    if why is not None:
        message += f": {_reason(rec, slot, why)}"
    elif name in ("mul", "*", "matmul", "@") and _multiplies_by_inf(rec):
        why = "0 * inf"
        message += ": 0 * inf is NaN"
    later = next((r for r in carriers if r is not rec and r.op in SOFTMAXES), None)
    if later is not None and later.line is not None:
        message += f"; the softmax at line {later.line} turns it into NaN"
    return diagnostic("non-finite", message, _hint(name, why), rec=rec, kind=kind, where=where,
                      cause=why)


def _reason(rec, slot: int, why: str) -> str:
    if why == "overflow":
        dtype = rec.outputs[slot].dtype if slot < len(rec.outputs) else None
        if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
            largest = torch.finfo(dtype).max
            return (f"an overflow, a value beyond {str(dtype).replace('torch.', '')}'s largest "
                    f"({largest:.3g})")
        return "an overflow, a value beyond the dtype's largest"
    if why == "0 * inf":
        return "0 * inf is NaN"
    if why == "a fill with +inf":
        return "the fill value is +inf, where a mask's -inf was meant"
    if why == "0/0":
        return "0/0 (a numerator and a denominator that are both 0)"
    return why


def _hint(name: str, why: str | None) -> str:
    if why == "overflow":
        if name in ("exp", "exp_", "exp2"):
            return ("Subtract the row's maximum before exp (x - x.amax(dim, keepdim=True)), or "
                    "use softmax / logsumexp, which do.")
        if name in ("half", "to", "bfloat16", "type"):
            return "Keep the values within range before the cast, or compute this part in float32."
        return ("Keep the operands in range: scale q by 1/sqrt(d) before the product, normalise "
                "the inputs (a LayerNorm before attention), or compute the scores in float32.")
    if why == "a fill with +inf":
        return ("Fill masked scores with float('-inf') (or a large negative number): a softmax "
                "of a row holding +inf is NaN, and -inf gives those keys weight 0.")
    if why == "0 * inf":
        return ("Build additive masks with masked_fill(mask, float('-inf')) or torch.where, "
                "not by multiplying a 0/1 mask by -inf.")
    if why in ("0/0", "division by 0"):
        return ("Keep the denominator away from 0: add an epsilon or clamp it (x.clamp_min(eps)); "
                "a sum of weights that every mask zeroed is 0.")
    if why in ("log of 0", "log of a negative number", "square root of a negative number"):
        return ("Keep the argument away from 0 and from negatives: clamp it (x.clamp_min(eps)) "
                "or add an epsilon first.")
    if name in ("log", "log2", "log10", "rsqrt", "sqrt", "reciprocal", "div", "__rdiv__", "pow"):
        return "Keep the argument away from 0 (and from negatives): add an epsilon or clamp it first."
    return "Check the values reaching this op: masks of -inf, divisions by 0, overflow."


def _multiplies_by_inf(rec) -> bool:
    numbers = [a for a in rec.args if isinstance(a, float)]
    numbers += [m.value for m in rec.inputs if isinstance(m.value, float)]
    return any(math.isinf(x) for x in numbers)
