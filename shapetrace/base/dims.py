"""Named dimensions and their probe sizes.

Every named dimension gets a distinct prime by default, so a size factors uniquely into names
and two axes can never be confused by their sizes alone. ``C`` is ``H*d`` unless set.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from .errors import UsageError
from .ops import next_prime

#: The default probe sizes; ``C`` is derived (H*d) unless given explicitly.
DEFAULT_SIZES: dict[str, int] = {"B": 5, "T": 7, "S": 17, "H": 11, "d": 13, "V": 19, "L": 23}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Dims(Mapping[str, int]):
    """An ordered, immutable mapping of dimension names to sizes.

    >>> Dims({"d": 8})["C"]
    88
    """

    __slots__ = ("_sizes", "_by_size", "_explicit", "_labels", "_strict", "_ambiguous",
                 "_factor_names", "_derived")

    def __init__(self, overrides: Mapping[str, int] | None = None):
        overrides = _validated(overrides)
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
        self._setup(ordered, frozenset(overrides), strict=False)

    @classmethod
    def declared(cls, sizes: Mapping[str, int], unnamed=()) -> "Dims":
        """Only the names given (a user's own sizes, or sizes proven from a model's config):
        no probe defaults. ``C`` is ``H*d`` and ``d`` is ``C/H`` when only the other two are
        given. A size shared by two names, or one no name explains, prints as its number.

        >>> Dims.declared({"B": 2, "T": 10, "C": 64, "H": 8}).label(10)
        'T'
        >>> Dims.declared({"B": 2, "T": 10, "C": 64, "H": 8}).label(20)
        '20'

        ``unnamed``: sizes that axes no name stands for also take (a batch of 8 beside a width
        C = 8 that only the model's ``n_embd`` proves). A name of such a size could be the wrong
        one, so the size prints as its number, as a size two names share does.

        >>> Dims.declared({"C": 8, "H": 2}, unnamed={8}).label(8)
        '8'
        """
        sizes = _validated(sizes)
        unnamed = frozenset(unnamed)
        ordered = {n: sizes[n] for n in ("B", "T", "S", "H", "d") if n in sizes}
        if "C" in sizes:
            ordered["C"] = sizes["C"]
        elif "H" in sizes and "d" in sizes:
            ordered["C"] = sizes["H"] * sizes["d"]
        if "d" not in ordered and "H" in ordered and "C" in ordered \
                and ordered["C"] % ordered["H"] == 0:
            ordered["d"] = ordered["C"] // ordered["H"]
        ordered.update((k, v) for k, v in sizes.items() if k not in ordered)
        self = cls.__new__(cls)
        self._setup(ordered, frozenset(sizes), strict=True,
                    unnamed=unnamed & set(ordered.values()))
        return self

    def _setup(self, ordered: dict[str, int], explicit: frozenset, strict: bool,
               unnamed: frozenset = frozenset()) -> None:
        self._sizes = ordered
        self._explicit = explicit
        self._strict = strict
        by_size: dict[int, str] = {}
        counts: dict[int, int] = {}
        for name, size in ordered.items():
            by_size.setdefault(size, name)
            counts[size] = counts.get(size, 0) + 1
        self._ambiguous = frozenset(s for s, n in counts.items() if n > 1) | unnamed
        self._by_size = by_size
        # Names that may stand for a factor of a size no name equals (429 -> 3*C): only those
        # no literal in the code is likely to equal, a prime of 5 or more, or C = H*d of two.
        factor_names = {s: n for s, n in by_size.items() if _is_prime(s) and s >= 5
                        and s not in self._ambiguous}
        h, d, c = ordered.get("H"), ordered.get("d"), ordered.get("C")
        if c and c == (h or 0) * (d or 0) and h in factor_names and d in factor_names \
                and c not in self._ambiguous:
            factor_names[c] = "C"
        self._factor_names = factor_names
        self._labels: dict[int, str] = {}  # size -> label, filled as sizes are asked for
        self._derived: dict = {}  # see derived()

    # Mapping protocol -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> int:
        return self._sizes[name]

    def __iter__(self):
        return iter(self._sizes)

    def __len__(self) -> int:
        return len(self._sizes)

    # Read straight from the dict: Mapping's versions go through __getitem__ and raise and
    # catch a KeyError for every name that is missing (``dims.get("d")`` at the user's sizes).
    def __contains__(self, name) -> bool:
        return name in self._sizes

    def get(self, name, default=None):
        return self._sizes.get(name, default)

    def keys(self):
        return self._sizes.keys()

    def values(self):
        return self._sizes.values()

    def items(self):
        return self._sizes.items()

    def __repr__(self) -> str:
        return "Dims(" + ", ".join(f"{k}={v}" for k, v in self._sizes.items()) + ")"

    def __eq__(self, other):
        return isinstance(other, Dims) and self._sizes == other._sizes

    def __hash__(self):
        return hash(tuple(self._sizes.items()))

    @property
    def fingerprint(self) -> tuple:
        """Everything a name given to a size depends on: equal for two ``Dims`` that label
        every size alike (``==`` compares the sizes only)."""
        return tuple(self._sizes.items()), self._explicit, self._strict, self._ambiguous

    # Queries ----------------------------------------------------------------------------------
    @property
    def strict(self) -> bool:
        """True for declared sizes (``Dims.declared``): no probe defaults, no guessed names."""
        return self._strict

    @property
    def explicit(self) -> frozenset[str]:
        """The names the user set (everything else is a default)."""
        return self._explicit

    def label(self, size: int) -> str:
        """A symbolic expression for ``size``: ``C``, ``3*C``, ``B*T``, or the number itself."""
        # Remembered: naming the axes of a trace asks for the same few sizes over and over.
        label = self._labels.get(size)
        if label is None:
            label = self._labels[size] = self._label(size)
        return label

    def _label(self, size: int) -> str:
        if size in self._by_size:
            if self._strict and size in self._ambiguous:
                return str(size)  # H = d = 8: either name could be wrong
            return self._by_size[size]
        if self._strict:
            return _strict_label(size, self._sizes, self._by_size, self._factor_names,
                                 self._ambiguous)
        return _label(size, self._by_size, self._factor_names)

    def derived(self, kind) -> dict:
        """A cache, one per ``kind`` (the function that fills it), of what another stage derives
        from these sizes and names alone: the axis of a size, the names a cut gives its pieces.
        It holds only pure functions of the dims (never anything of one trace), so it lives as
        long as they do, like the labels ``label`` remembers."""
        found = self._derived.get(kind)
        if found is None:
            found = self._derived[kind] = {}
        return found

    def piece_label(self, parent: str, size: int) -> str:
        """The label of a piece of ``size`` cut from a factor labelled ``parent`` (a view
        splitting C into heads). At declared sizes a piece takes only a name of the parent's own
        (C = H*d: H or d; 3*C: C), never one that merely shares its size: T = 8 does not name a
        head axis of 8 cut from C."""
        label = self.label(size)
        if not self._strict or label.isdigit():
            return label
        own = set(parent.split("*"))
        if "C" in own and self._sizes.get("C") == self._sizes.get("H", 0) * self._sizes.get("d", 0):
            own |= {"H", "d"}
        return label if {p for p in label.split("*") if not p.isdigit()} <= own else str(size)

    def shared(self, size: int) -> bool:
        """Whether a name of ``size`` could be the wrong one: two names share it, or (at the
        user's sizes) an axis no name stands for has it too."""
        return size in self._ambiguous

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


def _validated(sizes: Mapping[str, int] | None) -> dict[str, int]:
    sizes = dict(sizes or {})
    for name, size in sizes.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise UsageError(f"invalid dimension name {name!r}: use a Python identifier such as K")
        if isinstance(size, bool) or not isinstance(size, int):
            raise UsageError(f"dimension {name} must be an integer size, got {size!r}")
        if size <= 0:
            raise UsageError(f"dimension {name} must be a positive size, got {size}")
    return sizes


@functools.lru_cache(maxsize=1024)  # a pure fact of a number; every Dims asks of its sizes
def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, int(n ** 0.5) + 1))


def _label(size: int, by_size: Mapping[int, str], factor_names: Mapping[int, str]) -> str:
    """Probe sizes: the largest named divisor, the rest named only from distinct primes.

    With ``--dims H=4`` a model's ``4*C`` stays ``4*C``: the 4 is a literal in the code as
    likely as the head count, so only a size no literal is likely to equal names a cofactor.
    """
    if size <= 1:  # an empty axis (a KV cache before the first token)
        return str(size)
    # Largest named divisor first: 429 -> 3*C rather than 3*H*d.
    for named in sorted(by_size, reverse=True):
        # a named size of 2, 3 or 4 (B=2, H=4) is as likely a literal: it names no divisor
        if (named > 4 or named in factor_names) and size % named == 0:
            rest = size // named
            rest_label = _factor_label(rest, factor_names)
            if rest_label.isdigit() and rest > 64:
                continue  # a big unexplained cofactor says less than the number itself
            return f"{rest_label}*{by_size[named]}"
    return str(size)


def _factor_label(size: int, factor_names: Mapping[int, str]) -> str:
    if size in factor_names:
        return factor_names[size]
    for named in sorted(factor_names, reverse=True):
        if size % named == 0:
            rest = _factor_label(size // named, factor_names)
            if not rest.isdigit():
                return f"{rest}*{factor_names[named]}"
    return str(size)


def _strict_label(size: int, sizes: Mapping[str, int], by_size: Mapping[int, str],
                  factor_names: Mapping[int, str], ambiguous=frozenset()) -> str:
    """Declared sizes: a product of distinct primes, or ``k*NAME`` (k = 2, 3, 4) when exactly
    one name explains it and k is no name's size; else the number."""
    if size <= 1:
        return str(size)
    product = _factor_label(size, factor_names)
    if not product.isdigit() and not any(part.isdigit() for part in product.split("*")):
        return product
    found = {(size // n, by_size[n]) for n in sizes.values()
             if n > 4 and size % n == 0 and size // n in (2, 3, 4)}
    if len(found) == 1:
        k, name = found.pop()
        n = size // k
        if k not in by_size and n not in _ambiguous_sizes(sizes) and n not in ambiguous:
            return f"{k}*{name}"
    return str(size)


def _ambiguous_sizes(sizes: Mapping[str, int]) -> set[int]:
    seen: set[int] = set()
    twice: set[int] = set()
    for size in sizes.values():
        (twice if size in seen else seen).add(size)
    return twice


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


def resolve_dims(known: Mapping[str, int], sizes) -> Dims:
    """The names for a trace run at sizes nobody chose for it (``trace()`` around user code).

    ``known`` are the sizes the user declared or the model proves (its ``n_embd``, ``n_head``,
    ...). The probe defaults name the rest only when the tensors that entered the trace all
    came at probe sizes (``sizes``: their axis sizes), as in shapetrace's own runs and tests:
    every size is explained by names, at least two of them defaults. Otherwise only ``known``
    names anything (``Dims.declared``): at B=2, T=10 a 10 is ``10``, never ``2*B``.
    """
    full = Dims(known)
    probe = Dims()  # a name stated at its probe size (x=B,T,C at 5, 7, 143) counts as seen
    known = {k: v for k, v in known.items() if probe.get(k) != v}
    used: set[str] = set()  # default names that explain a size
    pure: set[str] = set()  # ... alone, with no literal factor (429 = 3*C is not pure)
    unexplained = False  # a size no name explains, or only with a big literal (64, 5*T)
    literal = False  # a size explained with a small literal factor (10 = 2*B)
    for size in set(sizes):
        if size <= 4:
            continue  # 1 to 4: literals as often as sizes, they prove nothing either way
        parts = full.label(size).split("*")
        if any(part.isdigit() and int(part) > 4 for part in parts) or all(map(str.isdigit, parts)):
            unexplained = True
            continue
        names = {other for part in parts if not part.isdigit()
                 for other, n in full.items() if n == full[part] and other not in known}
        if "C" in names and "C" not in full.explicit:
            names |= {"H", "d"} - set(known)  # 143 = H*d: two probe primes, no coincidence
        used |= names
        if any(map(str.isdigit, parts)):
            literal = True
        else:
            pure |= names
    if len(pure) >= 3 or (not unexplained and (len(used) >= 2 or (pure and not literal))):
        # B, T, C seen as themselves: a model's own constant (a 16-wide buffer) does not
        # undo that; with fewer, one size no name explains says these are not probe sizes
        return full
    return Dims.declared(dict(full.as_dict(set(full.explicit))))
