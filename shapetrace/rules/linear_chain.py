"""linear-collapse: two linear layers with nothing nonlinear between them, the hidden one wider.

A feed-forward widens each position's features and narrows them back (C -> 4C -> C) with an
activation between the two projections. Without it, ``W2 (W1 x + b1) + b2`` is one linear map
of rank at most C: the wider hidden layer computes nothing a single ``nn.Linear`` would not, and
the block has no nonlinearity at all. Read from the trace: a linear layer whose input is the
output of another, reached only through ops that keep every value a linear function of it
(dropout, a cast, a copy, a reshape that keeps the feature axis, a bias or a constant scale
added or multiplied in), where the features between them are wider than both the first's input
and the second's output. A narrower middle (a low-rank factorisation, a LoRA, a bottleneck) is
a choice and is not judged, nor is a chain through anything else (an activation, a norm, a
product of two values of the input, attention).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.ops import ADDS, CASTS, DIVS, DROPOUTS, MULS, RESHAPES
from .fixes import built_line
from .registry import diagnostic

if TYPE_CHECKING:
    from ..analysis.facts import Analysis
    from ..base.records import OpRecord, TensorMeta

_LINEARS = frozenset({"F.linear", "torch._C._nn.linear"})
#: ops whose output is their first operand's values, unchanged or moved
_SAME_VALUES = DROPOUTS | CASTS | frozenset({"Tensor.contiguous", "Tensor.clone", "torch.clone"})
#: ops that keep a linear function linear when their other operand is a constant or a weight
_AFFINE = ADDS | MULS | DIVS | frozenset({"-", "Tensor.sub", "torch.sub"})


def check_linear_collapse(analysis: Analysis):
    records = analysis.records
    seen: set = set()
    for second in analysis.records_of(_LINEARS):
        first = _linear_before(second, records)
        if first is None or second.error is not None:
            continue
        into, hidden = first.inputs[0].shape, first.outputs[0].shape
        out = second.outputs[0].shape if second.outputs else ()
        if not (into and hidden and out) or not hidden[-1] > max(into[-1], out[-1]):
            continue
        # both layers inside one container the class built (an nn.Sequential): its line
        built = built_line(second) if first.line == second.line and first.internal \
            and second.internal else None
        together = built is not None and built_line(first) == built
        built = built if together else None
        place = (second.file, built) if built is not None else None
        key = place or (second.file, second.line)
        if key in seen:  # one block called per layer: one finding
            continue
        seen.add(key)
        widths = f"{into[-1]} -> {hidden[-1]} -> {out[-1]}"
        where = "" if first.line == second.line else f" (the first at line {first.line})"
        message = (f"two linear layers run one after the other with nothing nonlinear between "
                   f"them{where}: {widths} features is one linear map of rank at most "
                   f"{min(into[-1], out[-1])}, so the wider hidden layer computes nothing one "
                   f"linear layer would not, and the block has no nonlinearity")
        hint = ("put the activation between the two layers: `self.fc2(F.gelu(self.fc1(x)))`, "
                "or `nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))`")
        yield diagnostic("linear-collapse", message, hint, rec=second, made_at=place,
                         first=first.index, widths=[into[-1], hidden[-1], out[-1]])


def _linear_before(second: OpRecord, records: list) -> OpRecord | None:
    """The linear layer whose output reaches ``second``'s input through value-keeping and
    affine ops only (see the module's docstring), or None."""
    if len(second.inputs) < 2 or second.inputs[1]._made_by is not None:
        return None  # a weight computed in the forward: not a layer of the module's own
    meta: TensorMeta = second.inputs[0]
    width = meta.shape[-1] if meta.shape else None
    for _ in range(16):
        index = meta._made_by
        if index is None or width is None:
            return None
        rec = records[index]
        if rec.op in _LINEARS:
            weight = rec.inputs[1] if len(rec.inputs) > 1 else None
            if weight is None or weight._made_by is not None or rec.error is not None \
                    or meta._slot != 0 or not rec.outputs or rec.outputs[0].shape != meta.shape:
                return None
            return rec
        if not rec.inputs or len(rec.outputs) != 1 or rec.error is not None:
            return None
        source = rec.inputs[0]
        if rec.op in RESHAPES:  # rows of the feature axis kept whole: its size on both sides
            if rec.outputs[0].shape[-1:] != (width,):
                return None
        elif rec.op in _AFFINE:
            made = [m for m in rec.inputs if m._made_by is not None]
            if len(made) != 1:
                return None  # two values of the forward (x * gelu(x)): not judged
            source = made[0]
            if rec.op not in ADDS and (len(rec.inputs) > 2 or any(
                    m is not source and len(m.shape) > 1 for m in rec.inputs)
                    or rec.op in DIVS and source is not rec.inputs[0]):
                return None  # scaled by an input of the forward, or the value a divisor
        elif rec.op not in _SAME_VALUES:
            return None
        if source.shape[-1:] != (width,):
            return None
        meta = source
    return None


__all__ = ["check_linear_collapse"]
