"""Pieces: factors a reshape cut by size, tied to the factor they came from.

A factor cut where no names explain the cut (an image height ``Y`` into windows,
``view(B, Y // 4, 4, ...)``; a sequence into chunks) becomes pieces named relative to it (``Y/4``
and ``4``, never a name that only shares the size, such as ``T`` for a window of 7), merged back
into it when they meet again whole and in order. ``foreign`` says when a reshape would cut a
piece to fill an axis already holding pieces it does not follow (windows merged back without
their permute). ``naming.provenance`` uses these while it reads reshapes.
"""

from __future__ import annotations

from ..base.dims import DEFAULT_SIZES, Dims

Factor = tuple  # (size, name)


# --- pieces: factors cut by size, tied to the factor they came from --------------------------

def _size_of(name: Piece) -> int:
    return name.whole[0] // (name.outer * name.inner)


class Piece(str):
    """The name of a factor cut from ``whole`` (a ``(size, name)`` factor) by size: a string, so
    it prints and compares like any factor name, that remembers where it lies in ``whole``:
    ``outer`` (the sizes of the pieces before it) times its own size times ``inner`` (the sizes
    after it) is ``whole``'s size. ``root`` is shared by all the pieces of one cut."""

    whole: tuple
    root: object
    outer: int
    inner: int


#: Names of the probe defaults: a cut piece never borrows one because its size matches.
_DEFAULT_NAMES = frozenset(DEFAULT_SIZES) | {"C"}


def label_tokens(label: str, dims: Dims) -> list[str]:
    """``3*C`` -> [3, H, d] (C read as H*d when it is)."""
    out = []
    h, d = dims.get("H"), dims.get("d")
    for part in label.split("*"):
        if part == "C" and h and d and dims.get("C") == h * d:
            out += ["H", "d"]
        else:
            out.append(part)
    return out


def _literal(size: int, dims: Dims) -> str:
    """A cut piece's own size as text: a name only when the user declared it for this size
    (``--dims w=4``), never a default such as ``T`` that merely has the same size."""
    name = dims.label(size)
    if name in dims.explicit and name not in _DEFAULT_NAMES:
        return name
    return str(size)


def _piece_name(parent: str, outer: int, size: int, inner: int, dims: Dims) -> str:
    """A piece's name: a name the user declared for its size, else relative to the factor it
    was cut from (``Y/4`` for the major piece, the window's own size for the minor one)."""
    own = _literal(size, dims)
    if not own.isdigit() or not parent.isidentifier() or parent == "C":
        # a declared name (96 cut into Y and X); pieces of 14 or 28*T are numbers, and so are
        # those of the model width: a cut of C is a head split, (H, d) when those are declared
        return own
    if outer == 1:
        return f"{parent}/{_literal(inner, dims)}"
    return own


def _piece(whole: tuple, root, outer: int, size: int, inner: int, dims: Dims,
           name: str | None = None) -> Factor:
    if outer == 1 and inner == 1:
        return whole
    if name is None:
        key = (whole[1], outer, size, inner)
        names = dims.derived(_piece)
        name = names.get(key)
        if name is None:
            name = names[key] = _piece_name(whole[1], outer, size, inner, dims)
    return (size, _new(name, whole, root, outer, inner))


def _new(name: str, whole: tuple, root, outer: int, inner: int) -> Piece:
    piece = Piece(name)
    piece.whole, piece.root, piece.outer, piece.inner = whole, root, outer, inner
    return piece


def renamed(label: str, text: str) -> str:
    """``text`` in place of ``label``, still tied to the factor ``label`` was cut from when it
    is a piece."""
    if isinstance(label, Piece):
        return _new(text, label.whole, label.root, label.outer, label.inner)
    return text


def _on_a_boundary(name: str, need: int, dims: Dims) -> bool:
    """Whether the cut falls between the names of ``name`` (C = H*d cut after H)."""
    tokens = label_tokens(name, dims)
    if len(tokens) < 2:
        return False
    product = 1
    for token in tokens[:-1]:
        size = int(token) if token.isdigit() else dims.get(token)
        if not size:
            return False
        product *= size
        if product == need:
            return True
    return False


def cut(f: Factor, need: int, dims: Dims) -> tuple[Factor, Factor]:
    """``f`` cut into a major factor of size ``need`` and the minor rest."""
    size, name = f
    rest = size // need
    is_piece = type(name) is Piece
    # How a factor of this name and size is cut depends on its name's text, the sizes and
    # the dims alone: worked out once per dims (a repeated block cuts the same factors). Only
    # the pieces themselves are made anew each time: each cut has a root of its own.
    key = (str(name) if is_piece else name, size, need, is_piece)  # text only: no piece kept
    plans = dims.derived(cut)
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = _cut_plan(name, need, rest, is_piece, dims)
    if type(plan[0]) is tuple:
        return plan  # the names explain the cut: two plain factors
    major, minor = plan
    if is_piece:  # named relative to this piece, placed within the whole
        root, whole, outer, inner = name.root, name.whole, name.outer, name.inner
        return ((need, _new(major, whole, root, outer, rest * inner)),
                (rest, _new(minor, whole, root, outer * need, inner)))
    root = object()
    return (need, _new(major, f, root, 1, rest)), (rest, _new(minor, f, root, need, 1))


def _cut_plan(name: str, need: int, rest: int, is_piece: bool, dims: Dims) -> tuple:
    """The two factors of a cut the names explain (``C`` -> ``H``, ``d``), or the names of the
    two pieces it makes (``Y/4``, ``4``)."""
    if is_piece:
        return _piece_name(name, 1, need, rest, dims), _piece_name(name, need, rest, 1, dims)
    major, minor = dims.piece_label(name, need), dims.piece_label(name, rest)
    if _on_a_boundary(name, need, dims):
        return (need, major), (rest, minor)  # C -> (H, d) at H = d = 8: the sizes print as 8, 8
    own = [t for t in label_tokens(name, dims) if not t.isdigit()]
    if own:
        parts = label_tokens(major, dims) + label_tokens(minor, dims)
        if all(own.count(t) <= parts.count(t) for t in own):
            # the names explain the cut: C -> H, d; 3*C -> 3, C; 2*d -> K, d
            return (need, major), (rest, minor)
    return _piece_name(name, 1, need, rest, dims), _piece_name(name, need, rest, 1, dims)


def fuse(taken: list, dims: Dims) -> tuple:
    """Neighbouring pieces of one cut, in order, joined again (whole again: the factor itself)."""
    if len(taken) < 2:
        return tuple(taken)
    out = [taken[0]]
    for f in taken[1:]:
        prev = out[-1][1]
        name = f[1]
        if isinstance(prev, Piece) and isinstance(name, Piece) and prev.root is name.root \
                and prev.inner == f[0] * name.inner:
            size = out[-1][0] * f[0]
            out[-1] = _piece(prev.whole, prev.root, prev.outer, size, name.inner, dims)
        else:
            out.append(f)
    return tuple(out)


def foreign(f: Factor, taken: list) -> bool:
    """Whether cutting the piece ``f`` would join it to pieces it does not follow. A piece is
    cut to fill an axis alone, after whole factors (``B``), or to continue the run of pieces
    of its own cut just before it (``Y/4`` then half of the ``4``): never after pieces of
    another axis (``Y/4``, ``X/4``, then half of ``Y``'s window: a jumble)."""
    name = f[1]
    if not isinstance(name, Piece):
        return False
    run = [t[1] for t in taken if isinstance(t[1], Piece)]
    if not run:
        return False
    if not isinstance(taken[-1][1], Piece) or len(run) != len(taken) - taken.index(
            next(t for t in taken if isinstance(t[1], Piece))):
        return True  # a whole factor after a piece
    for a, b in zip(run, run[1:] + [name]):
        if a.root is not b.root or a.inner != b.inner * _size_of(b):
            return True
    return False
