"""Constructor arguments left at a default of None that the constructor cannot take.

shapetrace keeps a constructor's own defaults. A default of None usually means "leave this part
out" (the constructor tests it), but code also writes ``emb_dim=None`` for an argument every
caller of the project passes: ``nn.Linear(emb_dim, width)`` or ``c + c_skip`` then raise on the
None, and the module could not be built on a value shapetrace left, not on a bug of the code.

When the constructor raised a ``TypeError`` or an ``AttributeError`` at a line of its own (or of
a layer it builds) that reads such a parameter while it holds None, the module is built again
with that parameter set to the size its name or its use says (the width when nothing says
more), with a note that names it. A failure that stands then is reported as before.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import FunctionType

from ..base.errors import TargetError
from ..base.source import none_parameters
from .defaults_read import switches_off
from .infer import MISSING, infer_value
from .plan import Plan
from .usage import meaning_by_use
from .widths import even_width

#: what a None read as a number, a sequence or an object raises
_RAISED_ON_NONE = (TypeError, AttributeError)


def constructor_reading(plan: Plan, failed: TargetError) -> Plan:
    """``plan`` built again another way after its constructor raised (``failed``): at an even
    width or heads of a multiple of its own (:func:`widths.even_width`), with the switches
    shapetrace turned on off (:func:`defaults_read.switches_off`), or with the sizes left at
    a default of None set (:func:`nones_filled`), the first that applies. Raises ``failed``
    when none does."""
    for reading in (even_width, switches_off):
        try:
            return reading(plan, failed)
        except TargetError:
            pass
    return nones_filled(plan, failed)


def nones_filled(plan: Plan, failed) -> Plan:
    """``plan`` with the constructor arguments that held their default None where the
    constructor raised (``failed``, a target error whose cause is that exception) set to a
    size. Raises ``failed`` when none did, or the caller gave them."""
    cause = failed.__cause__
    cls = plan.request.module
    if not isinstance(cause, _RAISED_ON_NONE) or plan.init is None or not inspect.isclass(cls):
        raise failed
    codes = {init.__code__ for klass in cls.__mro__
             if isinstance(init := klass.__dict__.get("__init__"), FunctionType)}
    try:
        defaults = {name: p.default for name, p in inspect.signature(cls).parameters.items()}
    except (TypeError, ValueError):
        raise failed from None
    given = set(plan.request.init or {})
    read = [name for name in none_parameters(cause.__traceback__, codes=codes)
            if name not in given and defaults.get(name, 0) is None
            and name in plan.init and plan.init[name] is None]
    dims = plan.dims
    values: dict = {}
    for name in read:
        value = infer_value(name, None, dims, has_default=False)
        if value is MISSING or not isinstance(value, int) or isinstance(value, bool):
            used = meaning_by_use(cls, name)
            value = dims[used] if used in dims else dims["C"]
        values[name] = value
    if not values:
        raise failed
    shown = ", ".join(f"{name}={value}" for name, value in values.items())
    first = next(iter(values))
    note = (f"{shown}: left at its default None the constructor raised {type(cause).__name__} "
            f"({str(cause).splitlines()[0][:80] if str(cause) else 'on the None'}); give --init "
            f"{first}=VALUE to choose")
    return dataclasses.replace(plan, init={**plan.init, **values}, note=note)
