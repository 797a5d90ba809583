"""Whether a forward takes its sequences time-first, as its author states it.

Inputs guessed from parameter names are batch-first (``x`` -> B,T,C). Some textbooks and
libraries write time-first code (``[seq_len, batch_size, d_model]``: the framework's own
language-model tutorial, nn.MultiheadAttention's default, labml's annotated implementations).
Handing such a forward batch-first data makes a correct model mix samples, which would be a
false batch-leak. Only the author's own words count as evidence, never a guess from the ops:

- an unpacking of an argument's shape with named sizes, time first and batch second
  (``seq_len, batch_size, _ = query.shape``);
- a docstring that gives a shape as ``[seq_len, batch_size, ...]``;
- a table of positions cut to the argument's first axis, ``self.pe[:x.size(0)]`` (the older
  tutorial's positional encoding), where batch-first code cuts ``self.pe[:, :x.size(1)]``.

Either kind that says batch-first (``B, T, C = x.shape``) anywhere in the forward cancels it.
Importing this module does not import torch. The words for a size are the vocabulary's
(``base.names.DIM_WORDS``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from collections.abc import Callable

from ..base.names import dim_of_word

_SHAPE_TEXT = re.compile(r"shape[^\[\(\n]{0,40}[\[\(]\s*`*([A-Za-z_]\w*)`*\s*,\s*`*([A-Za-z_]\w*)",
                         re.IGNORECASE)


def time_first(forward: Callable, params: list[str], owner: type | None = None) -> bool:
    """True when ``forward``'s author says its sequences come time-first (see the module). A
    forward that says nothing inherits what the nearest base class's forward says (a subclass
    that builds a mask and calls ``super().forward(x, x, x, mask)``)."""
    votes = set(_unpackings(forward, params)) | set(_docstring(forward))
    if not votes and isinstance(owner, type):
        for base in owner.__mro__[1:]:
            other = vars(base).get("forward")
            if other is None or not callable(other) or other is forward:
                continue
            try:
                names = list(inspect.signature(other).parameters)[1:]
            except (TypeError, ValueError):
                break
            votes = set(_unpackings(other, names)) | set(_docstring(other))
            if votes:
                break
    return votes == {"time-first"}


def _order(first: str, second: str) -> str | None:
    a, b = dim_of_word(first), dim_of_word(second)
    if a in ("T", "S") and b == "B":
        return "time-first"
    if a == "B" and b in ("T", "S"):
        return "batch-first"
    return None


def _unpackings(forward: Callable, params: list[str]):
    try:
        source = textwrap.dedent(inspect.getsource(forward))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return
    for node in ast.walk(tree):
        order = _table_cut(node, params)
        if order:
            yield order
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)):
            continue
        if _shape_of(node.value) not in params:
            continue
        names = [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
        if len(names) == len(node.targets[0].elts) and len(names) >= 2:
            order = _order(names[0], names[1])
            if order:
                yield order


def _table_cut(node: ast.AST, params: list[str]) -> str | None:
    """``self.pe[:x.size(0)]`` says time-first, ``self.pe[:, :x.size(1)]`` batch-first."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"):
        return None
    index = node.slice
    items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    for axis, item in enumerate(items[:2]):
        if not isinstance(item, ast.Slice) or item.lower is not None or item.step is not None:
            return None
        if item.upper is None:
            continue
        size = _axis_size(item.upper, params)
        if size is None:
            return None
        if (axis, size) == (0, 0):
            return "time-first"
        if (axis, size) == (1, 1):
            return "batch-first"
        return None
    return None


def _axis_size(value: ast.expr, params: list[str]) -> int | None:
    """``x.size(0)`` / ``x.shape[0]`` / ``len(x)`` of an argument: the axis read, else None."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "len" \
            and len(value.args) == 1 and isinstance(value.args[0], ast.Name) \
            and value.args[0].id in params:
        return 0
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "size" and len(value.args) == 1:
        owner, axis = value.func.value, value.args[0]
    elif isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) \
            and value.value.attr == "shape":
        owner, axis = value.value.value, value.slice
    else:
        return None
    if isinstance(owner, ast.Name) and owner.id in params and isinstance(axis, ast.Constant) \
            and isinstance(axis.value, int):
        return axis.value
    return None


def _shape_of(value: ast.expr) -> str | None:
    """The argument whose shape ``value`` reads: ``x.shape``, ``x.size()``, ``x.shape[:2]``."""
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and not value.args and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "size":
        value = value.func
    elif not (isinstance(value, ast.Attribute) and value.attr == "shape"):
        return None
    inner = value.value
    return inner.id if isinstance(inner, ast.Name) else None


def _docstring(forward: Callable):
    doc = inspect.getdoc(forward) or ""
    for first, second in _SHAPE_TEXT.findall(doc):
        order = _order(first, second)
        if order:
            yield order


def swapped(spec):
    """``spec`` time-first: (B, T, C) -> (T, B, C), (B, S, C) -> (S, B, C), (B, T) -> (T, B)."""
    if len(spec.dims) >= 2 and spec.dims[0] == "B" and spec.dims[1] in ("T", "S"):
        return dataclasses.replace(spec, dims=(spec.dims[1], "B", *spec.dims[2:]))
    return spec
