"""Sizes a module is built with that no probe size made: its own constants.

A module's constructor arguments are read at the probe sizes (``infer``); those of them that come
out the same at other probe sizes (a config's ``enc_in = 7`` read from the project's command
line, a ``num_classes=10`` default) are the module's own. When one of them equals a probe size,
an axis of that size can no longer be told from the constant: a forward that fails where the two
meet (``x * self.weight``: 143 features against the 7 channels a config fixed, the length also 7)
names the probe length where it means the channels. :func:`probe_off_own_size` moves that probe
size to a prime of its own, so that the next run says which it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..base.dims import Dims
from ..base.ops import next_prime
from .asked import INNER, MASK_MET, MET

#: probe sizes no default has, for reading the constructor once more
_OTHER = {"B": 29, "T": 31, "S": 37, "H": 41, "d": 43, "V": 47, "L": 53}

#: the probe sizes that may be moved: those shapetrace chooses for the inputs' axes
_MOVABLE = ("T", "S", "d")


def own_sizes(plan) -> frozenset[int]:
    """The whole numbers above 2 the plan builds its module with (its constructor's arguments
    and one level of a config object's fields) that stay the same when the constructor is read
    at other probe sizes. Empty when the module is an instance or cannot be read again."""
    from .infer import infer_init

    cls, init = plan.request.module, plan.init
    if not isinstance(cls, type) or not init:
        return frozenset()
    try:
        again = infer_init(cls, Dims(_OTHER), given=plan.request.init or {}, notes=[])
    except Exception:  # noqa: BLE001 - a constructor not read again says nothing
        return frozenset()
    first, second = dict(_numbers(init)), dict(_numbers(again))
    return frozenset(v for k, v in first.items() if second.get(k) == v and v > 2)


def _numbers(init: Mapping) -> list[tuple[str, int]]:
    """``(path, value)`` of each whole number among ``init``'s values and one level of their
    fields (a dataclass, a namespace, a dict)."""
    out = []
    for name, value in init.items():
        if type(value) is int:
            out.append((name, value))
        else:
            out += [(f"{name}.{k}", v) for k, v in _fields(value).items() if type(v) is int]
    return out


def _fields(value) -> Mapping:
    """The fields of a config object: a dict's items, a dataclass's or a namespace's attributes."""
    if isinstance(value, Mapping):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    if type(value).__name__ in ("Namespace", "SimpleNamespace"):
        return vars(value)
    return {}


def probe_off_own_size(failed, plan, free: frozenset) -> tuple[str, int, str] | None:
    """``(name, size, why)``: a probe size the failure met that equals one of the module's own
    sizes (``own_sizes``), moved to a prime no probe size and no size of the module has. The
    failure could be either's; the next run tells them apart. None otherwise."""
    raised = failed.raised
    if raised is None:
        return None
    text = str(raised)
    found = MET.search(text) or MASK_MET.search(text) or INNER.search(text)
    if found is None:
        return None
    met = {int(n) for n in found.groups()}
    dims = plan.dims
    names = [n for n in _MOVABLE if n in free and dims.get(n) in met
             and list(dims.values()).count(dims[n]) == 1]
    if not names:
        return None
    own = own_sizes(plan)
    name = next((n for n in names if dims[n] in own), None)
    if name is None:
        return None
    avoid = set(dims.values()) | set(own)
    size = next_prime(dims[name] + 2, avoid=avoid)
    return name, size, (f"a probe size apart from {dims[name]}, a size the module is built "
                        f"with that the failure met")
