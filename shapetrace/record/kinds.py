"""What the recorder's hot path needs to know about a torch function, worked out once per
function: its op name, its code object, and what to do when it runs (bit flags)."""

from __future__ import annotations

import types
from typing import Any

from ..base.compat import dispatching_caller
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
#: a function put in place of a torch function after torch's own looked itself up by name to
#: hand its call to the trace (a user's ``F.softmax = tempered``): the trace runs torch's
#: function, which the user's own called, not the user's again (:func:`rebound_call`)
REBOUND = 128

_WEIGHT_OPS = MATMULS - {"torch.addmm", "Tensor.addmm"}  # addmm is a linear layer, not attention

# func -> (kind, op name, code): a pure function of the torch function, like _ops.op_name's cache.
DESCRIBED: dict[Any, tuple] = {}
#: func -> the recorder's ``(kind, op name, code, None)`` of a function without Python code of
#: its own (``Tensor.view``, ``torch.matmul``) that reached a trace from C, not through a Python
#: function of torch's: no name of torch's was looked up on the way, so no patch can stand in
#: for it (:func:`rebound`); every trace's table of functions starts with these
FROM_C: dict[Any, tuple] = {}


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


def rebound(func, frame) -> tuple | None:
    """``(kind, op name, code)`` of the torch function whose call reaches the trace as ``func``
    because the name torch's function looks itself up by now holds ``func`` (a patch), or None
    when ``func`` is the function that made the call. ``frame``: the caller of the trace's
    ``__torch_function__``. Worked out once per function."""
    caller = dispatching_caller(frame)
    if caller is None:
        return None
    code = caller.f_code
    if code.co_freevars or caller.f_globals.get(code.co_name) is not func \
            or getattr(func, "__code__", None) is code:
        return None
    kind, name, _ = describe(types.FunctionType(code, caller.f_globals, code.co_name))
    return kind | REBOUND, name, code


def rebound_call(func, code, frame):
    """What to call for a call that reached the trace as ``func`` (marked :data:`REBOUND`):
    torch's own function, whose running ``frame`` (see :func:`rebound`) has ``code``, rebuilt
    with what that call was given as its defaults; ``func`` itself when the call came from
    elsewhere. Called as the trace calls any op, ``(*args, **kwargs)``: it runs torch's body
    alone, never the user's function a second time."""
    caller = dispatching_caller(frame)
    if caller is None or caller.f_code is not code:
        return func
    given = caller.f_locals
    names = code.co_varnames
    positional = code.co_argcount
    keyword = code.co_kwonlyargcount
    try:
        defaults = tuple(given[n] for n in names[:positional])
        keywords = {n: given[n] for n in names[positional:positional + keyword]}
    except KeyError:  # a parameter deleted before the call was handed over: call as given
        defaults, keywords = None, None
    original = types.FunctionType(code, caller.f_globals, code.co_name, defaults or None)
    original.__kwdefaults__ = keywords or None
    return original
