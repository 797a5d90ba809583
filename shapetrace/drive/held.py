"""A NaN or Inf the module held before it ran, and where its constructor made it.

:func:`held_non_finite` warns when the output holds a NaN or an Inf for finite inputs and no op
of the forward made one (a value the module held reached it), and names the values.

A table a constructor computes (a sinusoidal position table whose frequencies divide by a size
that is 0 in one column) is a buffer before forward runs: the trace of the forward sees the NaN
arrive from outside and can name no line. The constructor is run again, every op of it watched,
and the first op of the user's code whose result holds a NaN that none of its operands held is
the line that made it. Only NaN: a constructor fills an additive mask with -inf on purpose.
"""

from __future__ import annotations

import sys

import torch
from torch.overrides import TorchFunctionMode

from ..base.source import display_path, outer_user_frame
from ..record.tensors import tensors_in
from ..rules.registry import diagnostic


class _FirstNaN(TorchFunctionMode):
    """Records ``(file, line, op)`` of the first op that made a NaN from operands without one."""

    def __init__(self):
        super().__init__()
        self.found: tuple[str, int, str] | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.found is None and not getattr(func, "__name__", "").startswith("empty"):
            # (torch.empty's memory may hold anything: no op of the user's made it)
            with torch.no_grad():
                made = any(_nan(t) for t in tensors_in(out))
                if made and not any(_nan(t) for t in tensors_in((args, kwargs))):
                    site = outer_user_frame(sys._getframe(1), installed_is_library=True)
                    if site is not None:
                        self.found = (*site, getattr(func, "__name__", str(func)))
        return out


def _nan(t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and not t.is_meta \
        and bool(torch.isnan(t).any())


def nan_made_by_constructor(cls: type, init: dict) -> tuple[str, int, str] | None:
    """``(file, line, op)`` where ``cls(**init)`` first made a NaN, or None."""
    watch = _FirstNaN()
    try:
        with watch:
            cls(**init)
    except Exception:  # noqa: BLE001 - it was built once already; a second build says nothing
        return None
    return watch.found


def held_non_finite(trace, chosen) -> list:
    """An output that holds a NaN or an Inf for finite inputs when no op of the forward made one
    (no ``non-finite`` finding): a value the module held before it ran (a table its constructor
    divided by 0 to make, a weight left unset) reached it; a warning naming those values."""
    def floats(value):
        return [t for t in tensors_in(value) if t.is_floating_point() and not t.is_meta]

    with torch.no_grad():
        if any(d.rule == "non-finite" for d in trace.diagnostics) \
                or all(bool(torch.isfinite(t).all()) for t in floats(chosen.output)) \
                or not all(bool(torch.isfinite(t).all()) for t in floats(chosen.args)):
            return []
        held = [name for name, t in (*chosen.model.named_buffers(), *chosen.model.named_parameters())
                if t.is_floating_point() and not t.is_meta and not bool(torch.isfinite(t).all())]
    if not held:
        return []
    shown = ", ".join(f"`{name}`" for name in held[:4]) + (" ..." if len(held) > 4 else "")
    message = (f"the output holds NaN or Inf for finite inputs, and no op of the forward made one: "
               f"the module held it before it ran, in {shown}")
    hint = ("Look at where those values are made: a table its constructor computed (a division by "
            "a size that is 0 there), or a weight nothing initialises (torch.empty).")
    plan = chosen.plan
    made = nan_made_by_constructor(plan.request.cls, plan.init) if plan.init is not None else None
    if made is not None:  # the constructor's own op that made it: proven, an error there
        file, line, op = made
        message = (f"the output holds NaN for finite inputs: the constructor made it at line "
                   f"{line} (`{op}` of values without one), and the module held it in {shown}")
        return [diagnostic("non-finite", message, hint, file=display_path(file), line=line, op=op,
                           record=-1, module=type(chosen.model).__name__, held=held)]
    return [diagnostic("non-finite", message, hint, variant="held", record=-1,
                       module=type(chosen.model).__name__, held=held)]
