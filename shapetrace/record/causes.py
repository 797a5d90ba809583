"""Why an op made a NaN or an Inf out of finite numbers, read from the values while they exist.

The non-finite probe (``record.probes``) calls ``cause`` once, for the op it found to make the
first NaN or Inf, with that op's operands and the index of the first bad element, and keeps the
answer on the record (``NonFinite.cause``). The kind is decided from the numbers at that index,
never assumed from the op: a softmax row is "every key masked" only when every score in it is
-inf; a division is "0/0" only when both its numerator and its denominator are 0 there; an Inf
out of finite operands of a product, a sum, an ``exp`` or a cast to half precision is an
overflow: a value beyond the dtype's largest.
"""

from __future__ import annotations

import math

import torch

from ..base.ops import (
    DIVS,
    LOG_SOFTMAXES,
    MATMULS,
    MULS,
    SOFTMAXES,
    base_name,
    softmax_dim,
)
from ..base.records import OpRecord, TensorArg

OVERFLOW = "overflow"
ZERO_BY_ZERO = "0/0"
BY_ZERO = "division by 0"
LOG_OF_ZERO = "log of 0"
LOG_OF_NEGATIVE = "log of a negative number"
ROOT_OF_NEGATIVE = "square root of a negative number"
EVERY_KEY_MASKED = "every key masked"
ZERO_TIMES_INF = "0 * inf"

_LOGS = frozenset({"log", "log_", "log2", "log10"})
_ROOTS = frozenset({"sqrt", "sqrt_", "rsqrt"})
_RDIVS = frozenset({"__rdiv__", "__rtruediv__"})
_RECIPROCALS = frozenset({"reciprocal", "reciprocal_"})
_POWERS = frozenset({"pow", "pow_", "**", "__rpow__", "float_power"})
_VARIANCES = frozenset({"var", "std", "var_mean", "std_mean"})
#: Products and sums: finite operands, a non-finite result only past the dtype's range.
_SUMS = MATMULS | frozenset({"F.linear", "torch.bmm", "Tensor.sum", "torch.sum", "torch.cumsum",
                             "Tensor.cumsum"})


def cause(rec: OpRecord, operands: list | None, what: str, where: list[int] | None) -> str | None:
    """The kind of the NaN or Inf ``rec`` made at index ``where`` of its output, from its
    ``operands`` (the call's tensors in the tracer's order; None when they no longer exist):
    one of the names above, or None where the values do not say."""
    name = base_name(rec.op)
    try:
        with torch.no_grad():
            if rec.op in SOFTMAXES or rec.op in LOG_SOFTMAXES:
                return _softmax(rec, operands, where)
            if name in _LOGS or name == "log1p":
                x = _value(rec, operands, 0, where)
                if x is None:
                    return None
                x = x + 1 if name == "log1p" else x
                return LOG_OF_ZERO if x == 0 else LOG_OF_NEGATIVE if x < 0 else None
            if name in _ROOTS:
                x = _value(rec, operands, 0, where)
                if x is None:
                    return None
                return ROOT_OF_NEGATIVE if x < 0 else BY_ZERO if x == 0 and name == "rsqrt" else None
            if rec.op in DIVS or name in _RDIVS or name in _RECIPROCALS or rec.op == "/":
                return _division(rec, operands, what, where)
            if name in _POWERS:
                return OVERFLOW if what == "Inf" and _nonzero_operands(rec, operands, where) else None
            if name in _VARIANCES:
                return ZERO_BY_ZERO if what == "NaN" else None
            if rec.op in MULS and what == "NaN":
                return ZERO_TIMES_INF
            if what == "Inf" or rec.op in _SUMS:
                return OVERFLOW  # inf - inf inside a sum of overflowing products is NaN
    except Exception:  # values that cannot be read (a subclass, a functorch transform)
        return None
    return None


def _softmax(rec: OpRecord, operands: list | None, where: list[int] | None) -> str | None:
    picked = softmax_dim(rec)
    if not operands or where is None or picked is None:
        return None
    scores = operands[0]
    dim = picked[0]
    if scores.ndim != len(where) or not 0 <= dim < scores.ndim:
        return None
    index = list(where)
    index[dim] = slice(None)
    row = scores.detach()[tuple(index)]
    if bool(torch.isneginf(row).all()):
        return EVERY_KEY_MASKED
    if bool(torch.isposinf(row).any()):
        return OVERFLOW
    return None


def _division(rec: OpRecord, operands: list | None, what: str, where) -> str | None:
    name = base_name(rec.op)
    if name in _RECIPROCALS:
        top, bottom = 1.0, _value(rec, operands, 0, where)
    elif name in _RDIVS:
        top, bottom = _value(rec, operands, 1, where), _value(rec, operands, 0, where)
    else:
        top, bottom = _value(rec, operands, 0, where), _value(rec, operands, 1, where)
    if top is None or bottom is None:
        return None
    if bottom == 0:
        return ZERO_BY_ZERO if top == 0 else BY_ZERO
    return OVERFLOW if what == "Inf" else None


def _nonzero_operands(rec: OpRecord, operands, where) -> bool:
    values = [_value(rec, operands, i, where) for i in range(min(len(rec.args), 2))]
    return all(v is not None and v != 0 for v in values)


def _value(rec: OpRecord, operands: list | None, position: int, where) -> float | None:
    """Argument ``position`` of the call at the output index ``where`` (broadcast), a number."""
    if position >= len(rec.args):
        return None
    arg = rec.args[position]
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return float(arg)
    if not isinstance(arg, TensorArg) or operands is None or arg.index >= len(operands) \
            or where is None:
        return None
    t = operands[arg.index]
    if not isinstance(t, torch.Tensor) or t.ndim > len(where):
        return None
    index = [0 if size == 1 else i for size, i in zip(t.shape, where[len(where) - t.ndim:])]
    value = t.detach()[tuple(index)].item() if t.ndim else t.detach().item()
    return None if isinstance(value, complex) or math.isnan(value) else float(value)
