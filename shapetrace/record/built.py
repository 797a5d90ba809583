"""What a module's constructor computed on its own lines: each tensor of floats its code made
while it was built (a frequency ladder, a position table, a mask kept for later), and each of
integers (a relative-position index), with the line that made it, so that a finding about a
value made once can name the line that made it.

Only ops written on the user's lines are kept (what ``nn.Linear`` does inside torch is not), only
small results (a table, not a weight), and only their values: nothing is traced or named. The
values are kept per module, weakly, for as long as the module lives.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from ..base.compat import frame_getter
from ..base.source import display_path, resolve_site, site_from
from .tensors import holds_integers

#: the largest result kept (a table of positions by features, not a layer's weight)
_LARGEST = 1 << 16
#: the most results, and the most numbers in all, kept for one constructor
_MOST = 4096
_NUMBERS = 1 << 22

_BUILT: "weakref.WeakKeyDictionary[torch.nn.Module, tuple[Made, ...]]" = weakref.WeakKeyDictionary()


class Made(NamedTuple):
    """A tensor a constructor's own line made: the op, its place and a copy of its values."""

    op: str
    file: str
    line: int
    value: Tensor


class _Building(TorchFunctionMode):
    def __init__(self, kept: list[Made]):
        super().__init__()
        self.kept = kept
        self.numbers = 0
        self._getframe = frame_getter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if len(self.kept) < _MOST and isinstance(out, Tensor) and _small_numbers(out) \
                and self.numbers + out.numel() <= _NUMBERS:
            name = getattr(func, "__name__", None) or str(func)
            site = site_from(self._getframe(1))
            # written on the user's line; a reflected operator (``10000.0 ** t``: torch's own
            # ``Tensor.__rpow__`` in between) is the user's expression too
            if site is not None and (not site[2] or name.startswith("__r")):
                filename, line, _, _ = resolve_site(site[0], site[1])
                self.kept.append(Made(name, display_path(filename) or filename, line,
                                      out.detach().clone()))
                self.numbers += out.numel()
        return out


def _small_numbers(t: Tensor) -> bool:
    return ((t.is_floating_point() or holds_integers(t)) and 0 < t.numel() <= _LARGEST
            and not t.requires_grad and t.device.type == "cpu" and not t.is_meta)


def building(kept: list[Made]) -> TorchFunctionMode:
    """A context in which the tensors of floats made on the user's lines are added to ``kept``."""
    return _Building(kept)


def remember(model, kept: list[Made]) -> None:
    """Keep what building ``model`` made, for :func:`built_by`."""
    try:
        _BUILT[model] = tuple(kept)
    except TypeError:  # a model that cannot be weakly referenced
        pass


def built_by(model, integers: bool = False) -> tuple[Made, ...]:
    """The tensors of floats (``integers``: of integers) the constructor of ``model`` made on its
    own lines, in order; () when unknown."""
    try:
        made = _BUILT.get(model, ())
    except TypeError:
        return ()
    return tuple(m for m in made if holds_integers(m.value) == integers)
