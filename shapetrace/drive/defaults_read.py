"""A count set to a probe size over the constructor's own default, that the forward then
cannot split by.

shapetrace builds a module at its probe sizes (11 heads), also where the constructor has a
default of its own (``num_heads: int = 4``), so that the heads' axis is named. Code whose other
sizes are rounded to suit its defaults (a width rounded up to a multiple of 64, then split into
``num_heads`` heads) cannot be split by 11: the view fails on sizes shapetrace chose, not on
a bug. When the shape a failing view or reshape asks for holds such a count (or its quotient
by another count of the constructor's that does not divide it: ``num_heads // gka_ratio`` key
heads from 11 query heads), the module is built again with the count at its own default (in a
config dataclass too); a failure that stands then is the code's own.

Defaults that share a value are often one size said twice (``embedding_dim=1024`` and
``query_size=1024``, a query bank that must be as wide as the model): with one set to a probe
size and the other left, an op that meets both sizes fails on shapetrace's choice
(:class:`TiedDefaults`); the module is built again with the other at the same probe size.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.source import at_site
from .asked import numbers_in
from .guess import Guess

#: what torch says of a view or reshape that does not divide: the sizes asked for
_ASKED = re.compile(r"shape '\[([-\d, ]+)\]' is invalid for input of size \d+")


@dataclass(frozen=True)
class OverDefaults(Guess):
    """``given``: the constructor arguments the caller set (never put back); ``replan``: the
    plan again at other probe sizes (``plan.replanned``), for a head count put back."""

    given: frozenset
    replan: object = None

    def read_by(self, failed, plan) -> bool:
        return bool(self._restored(failed, plan)[1])

    def others(self, plan, failed) -> Iterator:
        init, restored = self._restored(failed, plan)
        shown = ", ".join(f"{name} at its default {default} (not {probe})"
                          for name, default, probe in restored)
        note = (f"{shown}: the forward could not split by the probe size ({failed.failed_op.op}"
                f"{at_site(failed.raised_at)}); give --init {restored[0][0]}=... to choose")
        heads = [default for name, default, probe in restored
                 if "." not in name and probe == plan.dims["H"] and "H" not in plan.dims.explicit]
        if heads and self.replan is not None:  # the heads' count is a probe size: H itself, so
            again = self.replan(plan, {"H": heads[0]})  # that the width is as many heads wide
            if again is not None:  # its other sizes still open (an even head size for rotary)
                rest = tuple(g for g in again.guesses if not isinstance(g, (OverDefaults, TiedDefaults)))
                yield dataclasses.replace(again, guesses=rest, note=note, reading_of=self)
        yield dataclasses.replace(plan, init=init, guesses=(), note=note, reading_of=self)

    def _restored(self, failed, plan) -> tuple[dict, list[tuple[str, int, int]]]:
        """The constructor arguments with each count the failing op asked to split by put back
        to its default, and which were put back: (``name``, default, probe size)."""
        asked = _asked(failed)
        if not asked or plan.init is None or not isinstance(plan.request.module, type):
            return {}, []
        init, restored = dict(plan.init), []
        defaults = constructor_defaults(plan.request.module)
        # a count split by another (``num_heads // gka_ratio`` key heads) asks for the quotient
        ratios = {v for v in {**defaults, **plan.init}.values() if _count(v) and v <= 16}
        for name, value in plan.init.items():
            if name in self.given:
                continue
            split = _count(value) and any(value % r and value // r in asked for r in ratios)
            if _count(value) and (value in asked or split) and _count(defaults.get(name)) \
                    and defaults[name] != value:
                init[name] = defaults[name]
                restored.append((name, defaults[name], value))
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                changed = {f.name: f.default for f in dataclasses.fields(value)
                           if f.init and _count(getattr(value, f.name, None))
                           and getattr(value, f.name) in asked and _count(f.default)
                           and f.default != getattr(value, f.name)}
                if changed:
                    try:
                        init[name] = dataclasses.replace(value, **changed)
                    except Exception:  # noqa: BLE001 - a config that refuses: no reading
                        continue
                    restored += [(f"{name}.{field}", default, getattr(value, field))
                                 for field, default in changed.items()]
        return init, restored


@dataclass(frozen=True)
class TiedDefaults(Guess):
    """``given``: the constructor arguments the caller set (never changed)."""

    given: frozenset

    def read_by(self, failed, plan) -> bool:
        return bool(self._tied(failed, plan))

    def others(self, plan, failed) -> Iterator:
        tied = self._tied(failed, plan)
        shown = ", ".join(f"{name}={probe} like {like} (both default to {default})"
                          for name, probe, like, default in tied)
        note = (f"{shown}: left at its default, the forward failed where the two sizes meet "
                f"({failed.failed_op.op}{at_site(failed.raised_at)}); give --init {tied[0][0]}=... "
                f"to choose")
        init = {**plan.init, **{name: probe for name, probe, _, _ in tied}}
        yield dataclasses.replace(plan, init=init, guesses=(), note=note, reading_of=self)

    def settled_by(self, attempt, plan) -> bool:
        """Built with the tied sizes together, the forward failed at an op that meets no
        default shapetrace replaced: that failure is the code's own."""
        op = attempt.failed_op
        if op is None or plan.init is None:
            return False
        replaced = {default for name, default in constructor_defaults(plan.request.module).items()
                    if _count(default) and plan.init.get(name, default) != default}
        return not replaced & _met(attempt)

    def _tied(self, failed, plan) -> list[tuple[str, int, str, int]]:
        """(``name``, probe size, the argument it is tied to, their default) for each argument
        left at a default that another argument shares and shapetrace set to a probe size, when
        the failing op met both sizes."""
        op = failed.failed_op
        if op is None or failed.raised is None or plan.init is None \
                or not isinstance(plan.request.module, type):
            return []
        met = _met(failed)
        defaults = constructor_defaults(plan.request.module)
        chosen = {default: (name, plan.init[name]) for name, default in defaults.items()
                  if name in plan.init and name not in self.given and _count(default)
                  and _count(plan.init[name]) and plan.init[name] != default}
        return [(name, chosen[default][1], chosen[default][0], default)
                for name, default in defaults.items()
                if name not in self.given and _count(default) and default in chosen
                and plan.init.get(name, default) == default
                and default in met and chosen[default][1] in met]


@dataclass(frozen=True)
class ModuleDefaults(Guess):
    """A constructor whose default is a module built with sizes of its own
    (``positional_encoder=PositionalEncoder(144)`` beside ``d_model=144``): with the sizes set
    to probe sizes, an op that meets the built module's size fails on shapetrace's choice. The
    module is built again with the sizes at their defaults; a failure then is the code's own.
    ``given``: the constructor arguments the caller set (never changed)."""

    given: frozenset
    replan: object = None

    def read_by(self, failed, plan) -> bool:
        return bool(self._restored(failed, plan))

    def others(self, plan, failed) -> Iterator:
        restored, built = self._restored(failed, plan)
        shown = ", ".join(f"{name}={value}" for name, value in restored.items())
        note = (f"{shown}, the defaults: the default {built} is built at those sizes, and at probe "
                f"sizes the forward failed where they meet ({failed.failed_op.op}"
                f"{at_site(failed.raised_at)}); give --init to choose")
        # the probe sizes those arguments were (the width, the heads) become their defaults, so
        # that the guessed inputs are as wide as the module
        sizes = {dim: restored[name] for name, value in plan.init.items() if name in restored
                 for dim in ("C", "H") if value == plan.dims[dim] and dim not in plan.dims.explicit}
        if {"C", "H"} <= set(sizes) and sizes["C"] % sizes["H"] == 0:
            sizes["d"] = sizes["C"] // sizes["H"]  # the head size they make
        again = self.replan(plan, sizes) if sizes and self.replan is not None else None
        if again is not None:
            yield dataclasses.replace(again, init={**again.init, **restored}, guesses=(),
                                      note=note, reading_of=self)
        yield dataclasses.replace(plan, init={**plan.init, **restored}, guesses=(), note=note,
                                  reading_of=self)

    def settled_by(self, attempt, plan) -> bool:
        return attempt.failed_op is not None

    def _restored(self, failed, plan) -> tuple[dict, str] | tuple:
        """(the sizes shapetrace replaced, at their defaults; the default module's argument)
        when a default is a module and the failing op met a replaced size's default that no
        probe size is."""
        import torch.nn as nn

        op = failed.failed_op
        if op is None or failed.raised is None or plan.init is None \
                or not isinstance(plan.request.module, type):
            return ()
        defaults = constructor_defaults(plan.request.module)
        built = [name for name, d in defaults.items() if isinstance(d, nn.Module)]
        replaced = {name: d for name, d in defaults.items() if name not in self.given
                    and _count(d) and name in plan.init and plan.init[name] != d}
        probes = set(plan.dims.values()) if hasattr(plan.dims, "values") else set()
        met = _met(failed) - probes
        if not built or not replaced or not met & set(replaced.values()):
            return ()
        return replaced, f"{built[0]}={type(defaults[built[0]]).__name__}(...)"


#: what torch says of a split whose sizes do not add up to the axis
_SPLIT = re.compile(r"split_sizes to sum exactly to (\d+).*split_sizes=\[([\d, ]+)\]")


def split_disagrees(result, chosen) -> bool:
    """A split whose sizes do not add up to an axis as wide as a constructor argument
    shapetrace chose (``out_features`` set to the width, split by head counts left at their
    defaults): the arguments it chose disagree, no verdict on the code; a target error."""
    found = _SPLIT.search(str(chosen.raised)) if chosen.raised is not None else None
    given = set(chosen.plan.request.init or {})
    chosen_sizes = {name: v for name, v in (chosen.plan.init or {}).items()
                    if type(v) is int and name not in given}
    if found is None or int(found.group(1)) not in chosen_sizes.values():
        return False
    names = ", ".join(n for n, v in chosen_sizes.items() if v == int(found.group(1)))
    result.error = (f"the forward splits an axis of {found.group(1)} (the size shapetrace chose for "
                    f"{names}) into [{found.group(2)}]{at_site(chosen.raised_at)}: the constructor "
                    f"arguments it chose do not add up; give them with --init")
    result.diagnostics = []
    return True


def _met(failed) -> set[int]:
    """The sizes the op that failed met: its operands' and those its error names."""
    return {n for meta in failed.failed_op.inputs for n in meta.shape} | numbers_in(str(failed.raised))


def _asked(failed) -> set[int]:
    """The sizes a view or reshape that failed asked for."""
    if failed.raised is None or failed.failed_op is None:
        return set()
    found = _ASKED.search(str(failed.raised))
    if found is None:
        return set()
    return {int(part) for part in found.group(1).split(",") if part.strip() not in ("", "-1")}


def _count(value) -> bool:
    return type(value) is int and value > 1


def constructor_defaults(cls: type) -> dict:
    """``name -> default`` of each argument of ``cls``'s constructor that has one."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty}


def switches_off(plan, failed):
    """``plan`` with the switches shapetrace turned on (``use_rel_pos: bool`` that nothing
    sets, made True so that the part it adds is checked) turned off again, when the
    constructor refused them on (``failed``: the part asks for values nothing gives, an
    ``assert exists(num_buckets)``). Raises ``failed`` when no switch was turned on."""
    from ..base.names import is_switch_param

    cls, given = plan.request.module, set(plan.request.init or {})
    try:
        params = inspect.signature(cls).parameters.values() if inspect.isclass(cls) else ()
    except (TypeError, ValueError):
        params = ()
    on = [p.name for p in params if p.default is p.empty and p.name not in given
          and (plan.init or {}).get(p.name) is True
          and is_switch_param(p)]
    if not on:
        raise failed
    cause = failed.__cause__ if failed.__cause__ is not None else failed
    note = (f"{', '.join(on)} set False: on, the constructor raised {type(cause).__name__}; "
            f"give --init {on[0]}=True with what that part needs to check it")
    return dataclasses.replace(plan, init={**plan.init, **dict.fromkeys(on, False)}, note=note)
