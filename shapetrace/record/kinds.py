"""What the recorder's hot path needs to know about a torch function, worked out once per
function: its op name, its code object, and what to do when it runs (bit flags)."""

from __future__ import annotations

from typing import Any

from ..base.ops import (
    MATMULS,
    RISKY_NAMES,
    SELECTS_VALUES,
    SOFTMAXES,
    UNINITIALISED,
    base_name,
    is_passthrough,
    op_name,
    reads_metadata_only,
)

# Kinds of function, worked out once per function and trace (bit flags).
PASSES = 1  # makes no tensor worth recording (x.shape, x.size()): only a use of its input
MULTIPLIES = 2  # a matmul-like op: also probe operands that may be attention weights
RISKY = 4  # can make NaN or Inf out of finite numbers (0/0, log 0, exp overflow, 0 * inf)
EMPTY_MEMORY = 8  # torch.empty and the like: whatever was in memory, not a NaN the user made
SOFTMAX = 16  # the weight probe looks at matmul operands a few ops after one of these
SELECTS = 32  # only moves values it is given (a -inf fill): makes no NaN or Inf of its own
LOOKS = 64  # a passthrough that reads values (.item(), bool(t)), not only the shape

_WEIGHT_OPS = MATMULS - {"torch.addmm", "Tensor.addmm"}  # addmm is a linear layer, not attention

# func -> (kind, op name, code): a pure function of the torch function, like _ops.op_name's cache.
DESCRIBED: dict[Any, tuple] = {}


def describe(func) -> tuple:
    """``(kind, op name, code)`` of a torch function; ``kind`` holds the flags above."""
    name = op_name(func)
    if is_passthrough(func):
        kind = PASSES if reads_metadata_only(func) else PASSES | LOOKS
    else:
        kind = (MULTIPLIES if name in _WEIGHT_OPS else 0) \
            | (RISKY if base_name(name) in RISKY_NAMES else 0) \
            | (EMPTY_MEMORY if name in UNINITIALISED else 0) \
            | (SOFTMAX if name in SOFTMAXES else 0) \
            | (SELECTS if name in SELECTS_VALUES else 0)
    described = (kind, name, getattr(func, "__code__", None))
    try:
        DESCRIBED[func] = described
    except TypeError:
        pass
    return described
