"""Where in the user's code an op ran: a cheap frame walk and lazy source lookup.

The hot path keeps only ``(code, lasti)`` of the first frame outside torch, shapetrace and a few
helper libraries; file, line, column span and the source text are worked out only when a
renderer or a rule asks for them.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
from functools import lru_cache

import torch

_SKIP_DIRS: tuple[str, ...] = tuple(
    os.path.dirname(m.__file__) + os.sep
    for m in (torch, sys.modules[__package__])
)
_USER_FILES = (os.sep + "_demo.py",)  # shapetrace's own demo is user code
_SKIP_PACKAGES = ("einops", "jaxtyping", "beartype", "typeguard", "contextlib", "functools")


def _extra_skip_dirs() -> tuple[str, ...]:
    out = []
    for name in _SKIP_PACKAGES:
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None)
        if path:
            # contextlib.py / functools.py are single files: skip exactly that file.
            out.append(os.path.dirname(path) + os.sep if path.endswith("__init__.py") else path)
    return tuple(out)


class _Internal(dict):
    """code object -> True when its frames belong to torch/shapetrace/helpers (cached)."""

    def __missing__(self, code):
        filename = code.co_filename
        internal = (
            (filename.startswith(_SKIP_DIRS) and not filename.endswith(_USER_FILES))
            or filename.startswith(_extra_skip_dirs())
            or filename.startswith("<frozen")
            or "<@beartype" in filename
        )
        self[code] = internal
        return internal


_internal = _Internal()


_DISPATCH_FILE = os.path.join(os.path.dirname(torch.__file__), "overrides.py")


def user_site(depth: int = 1, func_code=None):
    """``(code, lasti, internal)`` of the innermost frame that is the user's, or ``None``.

    ``internal`` is true when the op was called from library code (``F.linear`` inside
    ``nn.Linear.forward``) rather than written by the user on that line. Frames of torch's
    dispatch machinery and of the dispatched function itself (``func_code``) do not count.
    """
    frame = sys._getframe(depth + 1)
    while frame is not None and (frame.f_code is func_code or frame.f_code.co_filename == _DISPATCH_FILE):
        frame = frame.f_back
    first = frame
    internal = _internal
    while frame is not None:
        code = frame.f_code
        if not internal[code]:
            return code, frame.f_lasti, frame is not first
        frame = frame.f_back
    return None


@lru_cache(maxsize=4096)
def resolve_site(code, lasti: int) -> tuple[str, int, int | None, int | None]:
    """``(filename, line, col, end_col)`` of the instruction at ``lasti`` in ``code``."""
    positions = list(code.co_positions())
    index = lasti // 2
    if 0 <= index < len(positions):
        line, end_line, col, end_col = positions[index]
        if line is not None:
            if end_line != line:
                end_col = None
            return code.co_filename, line, col, end_col
    return code.co_filename, code.co_firstlineno, None, None


def source_line(filename: str, line: int) -> str:
    return linecache.getline(filename, line).rstrip("\n")


def source_segment(filename: str, line: int, col: int | None, end_col: int | None) -> str:
    """The exact expression text on a line (``k.transpose(1, 2)``), else the stripped line."""
    text = source_line(filename, line)
    if col is not None and end_col is not None and 0 <= col < end_col <= len(text.encode()):
        raw = text.encode()[col:end_col].decode(errors="replace")
        if raw.strip():
            return raw
    return text.strip()


def binop_operands(segment: str) -> tuple[str, str] | None:
    """For ``a @ b`` / ``a * b`` style expressions, the source text of the two operands."""
    try:
        node = ast.parse(segment.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.BinOp):
        return ast.unparse(node.left), ast.unparse(node.right)
    if isinstance(node, ast.Call) and len(node.args) >= 2:
        return ast.unparse(node.args[0]), ast.unparse(node.args[1])
    return None


def call_receiver(segment: str) -> str | None:
    """For ``x.view(...)`` the text ``x``; for ``torch.f(x, ...)`` the first argument."""
    try:
        node = ast.parse(segment.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and not _is_namespace(node.func.value):
            return ast.unparse(node.func.value)
        if node.args:
            return ast.unparse(node.args[0])
    if isinstance(node, ast.Attribute):
        return ast.unparse(node.value)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value)
    return None


def _is_namespace(node: ast.expr) -> bool:
    name = ast.unparse(node)
    return name in {"torch", "F", "nn.functional", "torch.nn.functional", "torch.linalg", "einops"}
