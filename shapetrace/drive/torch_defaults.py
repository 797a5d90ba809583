"""The number torch itself would use for a constructor argument the project's code leaves
open: the default of the torch parameter the constructor hands it to (``nn.LeakyReLU(self.alpha)``:
0.01), followed through classes of the user's that hand it on. Read from source; nothing is run.
"""

from __future__ import annotations

import ast
import inspect

from ..analysis.code import compared_with_none
from .usage import _DEPTH, _aliases, _bound, _function_def, _reading_init, _reads, _resolve, _tree, _user_code


def torch_default(cls: type, param: str, depth: int = _DEPTH):
    """The default torch's own callable gives the parameter that ``cls``'s constructor hands
    ``param`` to, directly or stored on ``self`` (``nn.LeakyReLU(self.alpha)``: 0.01), or
    through a class of the user's it builds with it (``Block(dim, drop_p)`` whose constructor
    hands it to ``nn.Dropout``), when every such use agrees on a number; rates they disagree
    on (a dropout's 0.5, an attention's 0.0) the least of them; else None."""
    found = _torch_defaults(cls, param, depth)
    if found is None or not found:
        return None
    if len(found) == 1:
        return found.pop()
    if all(type(r) is float and 0.0 <= r < 1.0 for r in found):
        return min(found)
    return None


def torch_default_for_none(cls: type, param, notes: list | None = None):
    """For a constructor argument ``param`` whose default is None, that the constructor never
    tests for None and hands to a torch parameter whose own default is a number
    (``nn.ConvTranspose1d(..., output_padding=output_padding)``): that number, with a note
    (torch fails on the None, the project's callers always pass one); else None."""
    init = _reading_init(cls) if isinstance(cls, type) else None
    if param.default is not None or init is None or not inspect.isfunction(init) \
            or compared_with_none(init, param.name):
        return None
    number = torch_default(cls, param.name)
    if number is not None and notes is not None:
        notes.append(f"{param.name}={number!r}, the default of the torch argument the "
                     f"constructor hands it to (None there fails); give --init {param.name}=VALUE "
                     f"to choose")
    return number


def _torch_defaults(cls: type, param: str, depth: int) -> set | None:
    """Every default of a torch parameter ``param`` reaches (see :func:`torch_default`); None
    when one of them is no number."""
    func = _reading_init(cls) if isinstance(cls, type) else None
    if depth <= 0 or func is None or not inspect.isfunction(func):
        return set()
    body = _function_def(_tree(func), func.__name__)
    if body is None:
        return set()
    is_param = _reads(*_aliases(body, param))
    found: set = set()
    for node in ast.walk(body):
        if not isinstance(node, ast.Call):
            continue
        callee = _resolve(node.func, func.__globals__)
        if callee is None or not callable(callee):
            continue
        for target, name in _bound(callee, node, is_param):
            if _user_code(target):  # a class of the user's: where it hands the value on
                deeper = _torch_defaults(target, name, depth - 1) if isinstance(target, type) else set()
                if deeper is None:
                    return None
                found |= deeper
                continue
            init = target.__init__ if isinstance(target, type) else target
            try:
                default = inspect.signature(init).parameters[name].default
            except (TypeError, ValueError, KeyError):
                return None
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                return None
            found.add(default)
    return found
