"""The class a constructor that takes ``**kwargs`` hands them to: its base class's constructor
(``super().__init__(causal=False, **kwargs)``), or another class of the user's that it builds
(``Block(width, **block_args)``); the arguments of that class, less those the call sets itself,
are the constructor's own."""

from __future__ import annotations

import ast
import inspect

from ..base.source import class_namespace
from .usage import _function_def, _init_of, _tree, _user_code


def kwargs_base(cls: type) -> tuple[type, frozenset[str]] | None:
    """``(callee, keywords it sets)`` when ``cls.__init__`` hands its ``**kwargs`` on to its base
    class's constructor (``super().__init__(causal=False, **kwargs)``) or to another class of
    the user's that it builds (``Block(width, **block_args)``: the arguments it passes itself,
    by keyword or by place, are its own), else None."""
    init = _init_of(cls)
    body = _function_def(_tree(init), "__init__") if init is not None else None
    if body is None:
        return None
    spread = body.args.kwarg.arg if body.args.kwarg is not None else None
    for node in ast.walk(body):
        if not isinstance(node, ast.Call) or not any(kw.arg is None for kw in node.keywords):
            continue
        set_there = frozenset(kw.arg for kw in node.keywords if kw.arg is not None)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            base = next((b for b in cls.__mro__[1:] if _init_of(b) is not None), None)
            if base is None or not _user_code(base):
                return None
            return base, set_there
        handed = any(kw.arg is None and isinstance(kw.value, ast.Name) and kw.value.id == spread
                     for kw in node.keywords)
        callee = class_namespace(cls).get(node.func.id) if handed and isinstance(node.func, ast.Name) \
            else None
        if isinstance(callee, type) and callee is not cls and _user_code(callee) \
                and _init_of(callee) is not None:
            try:
                placed = list(inspect.signature(callee).parameters)[:len(node.args)]
            except (TypeError, ValueError):
                return None
            return callee, set_there | frozenset(placed)
    return None
