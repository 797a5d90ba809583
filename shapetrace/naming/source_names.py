"""Names from the code that made the sizes: ``q.view(B, T, self.n_head, C // self.n_head)``.

At the user's own sizes two names can share a size (H = d = 8), and a size two names share
prints as its number: ``(B, T, 8, 8)``. But the code that made the axes often says which is
which: the integers a ``view``, ``reshape`` or ``expand`` is given are expressions in the user's
source. An argument that reads a name stating a size (``self.n_head``, ``config.n_embd``,
``head_dim``: the vocabulary's ``STATED``, or a word for a size such as ``B``, ``T``, ``hs``)
names its axis, and so does a width divided by the heads (``C // self.n_head`` is the head
size). Only an axis the sizes left unnamed is named this way, and only with a name of its very
size: where the source says nothing, the number stays.
"""

from __future__ import annotations

import ast

from ..base.dims import Dims
from ..base.names import STATED, dim_of_word
from .pieces import renamed

#: the ops whose arguments are the new shape, after the tensor they are called on
SHAPED_OPS = frozenset({"Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.expand"})
#: the ops whose first argument is the size of each piece along ``dim``
SPLIT_OPS = frozenset({"Tensor.split", "torch.split"})


def source_names(rec, n_axes: int, dims: Dims, cache: dict) -> list[str | None] | None:
    """For each new axis of ``rec`` (a view, reshape or expand), the dim its argument in the
    user's source names, or None; None when the source cannot be read that way. ``cache``: by
    call site, for the records of one trace (a loop runs the same line again)."""
    if rec.op not in SHAPED_OPS or rec.site is None or rec.internal:
        return None
    key = (id(rec.site[0]), rec.site[1], n_axes)
    if key in cache:
        return cache[key]
    found = cache[key] = _read(rec, n_axes)
    return found


def split_name(rec, cache: dict) -> tuple[int, str] | None:
    """``(dim, name)`` for a split whose piece size the source names (``x.split(self.n_embd,
    dim=2)``: each piece's axis 2 is C), else None."""
    if rec.op not in SPLIT_OPS or rec.site is None or rec.internal:
        return None
    key = (id(rec.site[0]), rec.site[1], "split")
    if key not in cache:
        cache[key] = _read_split(rec)
    return cache[key]


def _read_split(rec) -> tuple[int, str] | None:
    try:
        node = ast.parse(rec.source.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Call):
        return None
    args = list(node.args)[1 if rec.op == "torch.split" else 0:]
    dim = next((k.value for k in node.keywords if k.arg == "dim"), args[1] if len(args) > 1
               else ast.Constant(0))
    if not args or any(k.arg not in ("dim", "split_size", "split_size_or_sections")
                       for k in node.keywords):
        return None
    if isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) \
            and isinstance(dim.operand, ast.Constant):
        dim = ast.Constant(-dim.operand.value)
    name = _named(args[0])
    if name is None or not isinstance(dim, ast.Constant) or type(dim.value) is not int:
        return None
    return dim.value, name


def _read(rec, n_axes: int) -> list[str | None] | None:
    try:
        node = ast.parse(rec.source.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    args = list(node.args)
    if rec.op == "torch.reshape":
        args = args[1:]  # torch.reshape(x, shape)
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = list(args[0].elts)
    if len(args) != n_axes or any(isinstance(a, ast.Starred) for a in args):
        return None
    return [_named(a) for a in args]


def _named(node: ast.expr) -> str | None:
    """The dim an argument names: a name or attribute that states a size, or a width divided
    by the heads (the head size) or by the head size (the heads)."""
    if isinstance(node, ast.Name):
        return _word(node.id)
    if isinstance(node, ast.Attribute):
        return _word(node.attr)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div)):
        left, right = _named(node.left), _named(node.right)
        if left in ("C", None) and right == "H":
            return "d"
        if left in ("C", None) and right == "d":
            return "H"
    return None


def _word(name: str) -> str | None:
    return STATED.get(name) or dim_of_word(name)


def named_split(axes: tuple, at: tuple[int, str], dims: Dims) -> tuple:
    """``axes`` (a piece of a split) with its axis ``at[0]`` named ``at[1]`` when that axis is a
    bare number of that name's size."""
    dim, name = at
    if not -len(axes) <= dim < len(axes):
        return axes
    names: list[str | None] = [None] * len(axes)
    names[dim] = name
    return named_axes(axes, names, dims)


def named_axes(axes: tuple, names: list[str | None], dims: Dims) -> tuple:
    """``axes`` with each one-factor axis whose name is a bare number (or a name its size alone
    gave, shared with others) named after what its argument names, when that name's size is
    the axis's size."""
    out = []
    for axis, name in zip(axes, names):
        if name is not None and len(axis) == 1:
            size, label = axis[0]
            # a number, or a name the size alone gave where names share it (H = C at d = 1)
            guessed = isinstance(label, str) and (label.isdigit() or (
                label != name and label in dims and dims.shared(size)))
            if guessed and dims.get(name) == size:
                axis = ((size, renamed(label, name)),)  # a piece stays tied to its factor
        out.append(axis)
    return tuple(out)
