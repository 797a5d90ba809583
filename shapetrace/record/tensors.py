"""Tensors as the recorder meets them: inside what code passes and returns, and the odd ones
that do not answer the usual questions."""

from __future__ import annotations

import torch

from ..base.records import TensorMeta

Tensor = torch.Tensor


def tensors_in(obj, depth: int = 0):
    """The tensors in ``obj``: itself, or inside tuples, lists and dict values, three levels
    deep at most (a module's output, a ``(k, v)`` cache kept on a module)."""
    if isinstance(obj, Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (tuple, list)):
        for x in obj:
            yield from tensors_in(x, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            yield from tensors_in(x, depth + 1)


def dead():
    """The weak reference of a tensor that could not have one: reads as gone."""
    return None


def odd_meta(t: Tensor, made_by, slot: int) -> TensorMeta:
    """The metadata of a tensor that does not answer the usual questions (a sparse CSR or a
    nested tensor): its shape where it has one, never contiguous."""
    try:
        shape = tuple(int(s) if isinstance(s, int) else -1 for s in t.shape)
    except Exception:
        shape = ()
    return TensorMeta(shape, getattr(t, "dtype", None), False, made_by, slot)


#: The tables every trace's recorder shares, of values records only read, each kept once: one
#: tuple per distinct shape, per recorded argument tuple, per keyword-argument dict (read-only)
#: and per place in the user's code (``id(code) -> (code, {key: site})``). A model traced again
#: records the very tuples it did before (which the naming memo then compares at once). A table
#: is emptied when it has grown past SHARED_LIMIT entries.
SHARED: tuple[dict, dict, dict, dict] = ({}, {}, {}, {})
SHARED_LIMIT = 20_000


def shared_tables() -> tuple[dict, dict, dict, dict]:
    """:data:`SHARED`, each table emptied first when it has grown past :data:`SHARED_LIMIT`."""
    for table in SHARED:
        if len(table) > SHARED_LIMIT:
            table.clear()
    return SHARED


def holds_integers(t: Tensor) -> bool:
    """Whether ``t`` holds integers (indices, counts), not floats, complex numbers or booleans."""
    return not t.is_floating_point() and not t.is_complex() and t.dtype is not torch.bool
