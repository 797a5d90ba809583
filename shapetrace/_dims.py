"""Named dimensions and their probe sizes.

Every named dimension gets a distinct prime by default, so a size factors uniquely into names
and two axes can never be confused by their sizes alone. ``C`` is ``H*d`` unless set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ._errors import UsageError
from ._ops import next_prime

#: The default probe sizes; ``C`` is derived (H*d) unless given explicitly.
DEFAULT_SIZES: dict[str, int] = {"B": 5, "T": 7, "S": 17, "H": 11, "d": 13, "V": 19, "L": 23}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Dims(Mapping[str, int]):
    """An ordered, immutable mapping of dimension names to sizes.

    >>> Dims({"d": 8})["C"]
    88
    """

    __slots__ = ("_sizes", "_by_size", "_explicit", "_labels")

    def __init__(self, overrides: Mapping[str, int] | None = None):
        overrides = dict(overrides or {})
        for name, size in overrides.items():
            if not isinstance(name, str) or not _NAME.match(name):
                raise UsageError(f"invalid dimension name {name!r}: use a Python identifier such as K")
            if isinstance(size, bool) or not isinstance(size, int):
                raise UsageError(f"dimension {name} must be an integer size, got {size!r}")
            if size <= 0:
                raise UsageError(f"dimension {name} must be a positive size, got {size}")
        sizes = dict(DEFAULT_SIZES)
        sizes.update({k: v for k, v in overrides.items() if k != "C"})
        ordered: dict[str, int] = {}
        for name in ("B", "T", "S", "H", "d"):
            ordered[name] = sizes.pop(name)
        ordered["C"] = overrides.get("C", ordered["H"] * ordered["d"])
        for name in ("V", "L"):
            ordered[name] = sizes.pop(name)
        ordered.update(sizes)  # user-added names, in the order given
        if "L" not in overrides and ordered["L"] < ordered["T"]:
            ordered["L"] = next_prime(ordered["T"] + 1, avoid=set(ordered.values()))
        self._sizes = ordered
        self._explicit = frozenset(overrides)
        by_size: dict[int, str] = {}
        for name, size in ordered.items():
            by_size.setdefault(size, name)
        self._by_size = by_size
        self._labels: dict[int, str] = {}  # size -> label, filled as sizes are asked for

    # Mapping protocol -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> int:
        return self._sizes[name]

    def __iter__(self):
        return iter(self._sizes)

    def __len__(self) -> int:
        return len(self._sizes)

    def __repr__(self) -> str:
        return "Dims(" + ", ".join(f"{k}={v}" for k, v in self._sizes.items()) + ")"

    def __eq__(self, other):
        return isinstance(other, Dims) and self._sizes == other._sizes

    def __hash__(self):
        return hash(tuple(self._sizes.items()))

    # Queries ----------------------------------------------------------------------------------
    @property
    def explicit(self) -> frozenset[str]:
        """The names the user set (everything else is a default)."""
        return self._explicit

    def label(self, size: int) -> str:
        """A symbolic expression for ``size``: ``C``, ``3*C``, ``B*T``, or the number itself."""
        # Remembered: naming the axes of a trace asks for the same few sizes over and over.
        label = self._labels.get(size)
        if label is None:
            label = self._labels[size] = _label(size, self._by_size)
        return label

    def collisions(self) -> list[tuple[str, str, int]]:
        """Pairs of names that share one size (``B=T`` hides a batch/time swap)."""
        seen: dict[int, str] = {}
        out = []
        for name, size in self._sizes.items():
            if size in seen and size > 1:
                out.append((seen[size], name, size))
            else:
                seen.setdefault(size, name)
        return out

    def as_dict(self, used: set[str] | None = None) -> dict[str, int]:
        return {k: v for k, v in self._sizes.items() if used is None or k in used}


def _label(size: int, by_size: Mapping[int, str]) -> str:
    if size in by_size:
        return by_size[size]
    if size <= 1:  # an empty axis (a KV cache before the first token)
        return str(size)
    # Largest named divisor first: 429 -> 3*C rather than 3*H*d.
    for named in sorted(by_size, reverse=True):
        if named > 1 and size % named == 0:
            rest = size // named
            rest_label = _label(rest, by_size)
            if rest_label.isdigit() and rest > 64:
                continue  # a big unexplained cofactor says less than the number itself
            return f"{rest_label}*{by_size[named]}"
    return str(size)


def parse_dims(text: str) -> dict[str, int]:
    """Parse ``"B=5,T=7"`` into a dict, with one clear error for each mistake."""
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise UsageError(f"--dims expects NAME=SIZE, got {item!r}")
        if not _NAME.match(name):
            raise UsageError(f"--dims: invalid dimension name {name!r}")
        try:
            size = int(value)
        except ValueError:
            raise UsageError(f"--dims: size of {name} must be an integer, got {value.strip()!r}") from None
        if size <= 0:
            raise UsageError(f"--dims: size of {name} must be positive, got {size}")
        out[name] = size
    return out
