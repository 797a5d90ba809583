"""Where in the user's code something ran: the one walk that finds the user's frame, and lazy
source lookup.

The tracer's hot path keeps only ``(code, lasti)`` of the first frame outside torch, shapetrace,
Python's standard library and a few helper libraries; file, line, column span and the source
text are worked out only when a renderer or a rule asks for them. The same notion of "the
user's code" places errors raised while importing, building or running a target.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import linecache
import os
import re
import sys
import sysconfig
from functools import lru_cache

from .compat import caller_frame, instruction_position


def _package_dir(name: str) -> str:
    """A package's directory, found without importing it (this module does not import torch)."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None and spec.origin else f"<no {name}>/"
    return os.path.dirname(origin)


_TORCH_DIR = _package_dir("torch")
#: shapetrace's own package directory (this file is in its ``base`` subpackage)
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKIP_DIRS: tuple[str, ...] = (_TORCH_DIR + os.sep, _OWN_DIR)
#: shapetrace's own demo is user code: its modules are what a student writes
_USER_FILES = (os.path.join(_OWN_DIR, "frontends", "demo.py"),)
_SKIP_PACKAGES = ("einops", "jaxtyping", "beartype", "typeguard", "contextlib", "functools",
                  "_pytest", "pluggy")


def _paths(*keys: str) -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.join(paths[k], "") for k in keys if paths.get(k)}))


_STDLIB = _paths("stdlib", "platstdlib")
_INSTALLED = _paths("purelib", "platlib")


def _extra_skip_dirs() -> tuple[str, ...]:
    out = []
    for name in _SKIP_PACKAGES:
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None)
        if path:
            # contextlib.py / functools.py are single files: skip exactly that file.
            out.append(os.path.dirname(path) + os.sep if path.endswith("__init__.py") else path)
    return tuple(out)


def is_own_file(filename: str) -> bool:
    """Whether ``filename`` is one of shapetrace's own modules (its demo aside)."""
    return filename.startswith(_OWN_DIR) and filename not in _USER_FILES


def is_library_file(filename: str, *, installed_is_library: bool = False) -> bool:
    """Whether ``filename`` belongs to torch, shapetrace, a helper library or Python itself
    rather than to the user. Installed packages (site-packages) count as the user's code unless
    ``installed_is_library``: a Hugging Face model's ops are its own lines, but an import error
    is placed in the user's file, not inside the package that raised it."""
    if filename.startswith("<"):  # <frozen importlib>, beartype's <@beartype(...)> wrappers
        return filename.startswith(("<frozen", "<@beartype"))
    if filename.startswith(_SKIP_DIRS) and not filename.endswith(_USER_FILES):
        return True
    if filename.startswith(_extra_skip_dirs()) or "<@beartype" in filename:
        return True
    if filename.startswith(_INSTALLED):
        return installed_is_library
    return filename.startswith(_STDLIB)


# id(code) -> (code, kind) for every code object the frame walk met: _USER, _LIBRARY (torch,
# shapetrace, helpers, Python itself) or _DISPATCH (torch's __torch_function__ machinery). Keyed
# by id, the code object kept alongside to tell a reused id: hashing a code object is not cached
# and costs as much as the rest of the walk.
_USER, _LIBRARY, _DISPATCH = 0, 1, 2
_kinds: dict[int, tuple] = {}


def _kind(code) -> int:
    entry = _kinds.get(id(code))
    if entry is None or entry[0] is not code:
        filename = code.co_filename
        kind = _DISPATCH if filename == _DISPATCH_FILE else \
            _LIBRARY if is_library_file(filename) else _USER
        entry = _kinds[id(code)] = (code, kind)
    return entry[1]


def innermost_user_frame(tb, *, installed_is_library: bool = True,
                         files_only: bool = False) -> tuple[str, int] | None:
    """``(filename, line)`` of the innermost traceback entry in the user's code, skipping
    frames that ask to be hidden (``__tracebackhide__``), or None. ``files_only`` also skips
    code with no file to open (``<string>``: a dataclass's generated ``__init__``)."""
    found = innermost_user_entry(tb, installed_is_library, files_only)
    return (found[0].f_code.co_filename, found[1]) if found is not None else None


def innermost_user_entry(tb, installed_is_library: bool, files_only: bool = False):
    """``(frame, line)`` of the innermost traceback entry in the user's code (see
    :func:`innermost_user_frame`), or None."""
    found = None
    while tb is not None:
        frame = tb.tb_frame
        filename = frame.f_code.co_filename
        if not is_library_file(filename, installed_is_library=installed_is_library) \
                and not (files_only and filename.startswith("<")) \
                and not frame.f_locals.get("__tracebackhide__", False):
            found = (frame, tb.tb_lineno)
        tb = tb.tb_next
    return found


def none_parameters(tb, *, installed_is_library: bool = False, codes=None) -> tuple[str, ...]:
    """The parameters of the innermost user frame of ``tb`` that hold None and that the line
    it raised at reads (``encoder_padding_mask.float()`` with ``encoder_padding_mask=None``):
    read while the frames exist. ``codes``: take the innermost frame running one of these code
    objects instead (a constructor whose None reached a layer it builds)."""
    found = innermost_user_entry(tb, installed_is_library) if codes is None \
        else innermost_entry_of(tb, codes)
    if found is None:
        return ()
    frame, line = found
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    text = linecache.getline(code.co_filename, line)
    return tuple(name for name in code.co_varnames[:count]
                 if frame.f_locals.get(name, 0) is None
                 and re.search(rf"\b{re.escape(name)}\b", text))


def innermost_entry_of(tb, codes):
    """``(frame, line)`` of the innermost traceback entry running one of the code objects
    ``codes``, or None."""
    found = None
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            found = (tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return found


def outer_user_frame(frame, *, installed_is_library: bool) -> tuple[str, int] | None:
    """``(filename, line)`` of ``frame`` or the nearest frame that called it in the user's
    code (a caller of a patched constructor, of ``.cuda()``), or None."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_library_file(filename, installed_is_library=installed_is_library):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def at_line(file: str | None, line: int | None) -> str:
    """`` at FILE:LINE`` for a message, the file as :func:`display_path` shows it; "" without
    both."""
    return f" at {display_path(file) or file}:{line}" if file and line else ""


def at_site(site: tuple[str, int] | None) -> str:
    """:func:`at_line` of a ``(file, line)`` place, or "" without one."""
    return at_line(*site) if site else ""


def user_frame(exc: BaseException) -> tuple[str, int] | None:
    """``(file, line)`` of the innermost traceback entry of ``exc`` in the user's code (not
    torch, shapetrace or an installed helper), the file as :func:`display_path` shows it."""
    found = innermost_user_frame(exc.__traceback__, installed_is_library=False)
    return (display_path(found[0]), found[1]) if found else None


def class_file(cls: type) -> str | None:
    """The file a class is defined in, also when its module is no longer in ``sys.modules``
    (a target's, taken out again after its run): from its module, else from the code of a
    function it defines."""
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    filename = getattr(module, "__file__", None)
    if isinstance(filename, str):
        return filename
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None:
            return code.co_filename
    return None


def class_namespace(cls: type) -> dict:
    """The global names of the module a class is defined in, also when that module is no
    longer in ``sys.modules``: its module's, else those its functions see."""
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    if module is not None:
        return vars(module)
    for value in vars(cls).values():
        found = getattr(getattr(value, "__func__", value), "__globals__", None)
        if isinstance(found, dict):
            return found
    return {}


#: the working directory paths are shown against, set by a command for its whole run
#: (:func:`shown_from`): a forward that calls ``os.chdir`` changes nothing in the report
_SHOWN_FROM: list[str] = []


@contextlib.contextmanager
def shown_from(directory: str):
    """Show paths relative to ``directory`` while inside, whatever the working directory
    becomes."""
    _SHOWN_FROM.append(directory)
    try:
        yield
    finally:
        _SHOWN_FROM.pop()


def shown_directory() -> str | None:
    """The directory :func:`display_path` shows paths relative to now (None where the working
    directory cannot be read)."""
    if _SHOWN_FROM:
        return _SHOWN_FROM[-1]
    try:
        return os.getcwd()
    except OSError:
        return None


def display_path(path: str | None) -> str | None:
    """A path relative to the working directory when it lies below it, else as given (the
    directory a command started in, while :func:`shown_from` holds it)."""
    if not path or path.startswith("<"):
        return path
    try:
        rel = os.path.relpath(path, _SHOWN_FROM[-1]) if _SHOWN_FROM else os.path.relpath(path)
    except (ValueError, OSError):
        return path
    return path if rel.startswith("..") else rel


_DISPATCH_FILE = os.path.join(_TORCH_DIR, "overrides.py")


def user_site(depth: int = 1, func_code=None):
    """``(code, lasti, internal)`` of the innermost frame that is the user's, or ``None``.

    ``internal`` is true when the op was called from library code (``F.linear`` inside
    ``nn.Linear.forward``) rather than written by the user on that line. Frames of torch's
    dispatch machinery and of the dispatched function itself (``func_code``) do not count.
    """
    return site_from(caller_frame(depth + 1), func_code)


def site_from(frame, func_code=None):
    """:func:`user_site`, from ``frame`` outwards (the tracer's hot path hands its caller's
    frame over itself, saving the calls in between)."""
    kinds = _kinds
    while frame is not None:  # torch's dispatch and the dispatched function itself
        code = frame.f_code
        entry = kinds.get(id(code))
        kind = entry[1] if entry is not None and entry[0] is code else _kind(code)
        if code is not func_code and kind != _DISPATCH:
            break
        frame = frame.f_back
    else:
        return None
    if kind == _USER:  # the common case: a Tensor method written on the user's line
        return code, frame.f_lasti, False
    frame = frame.f_back
    while frame is not None:
        code = frame.f_code
        entry = kinds.get(id(code))
        kind = entry[1] if entry is not None and entry[0] is code else _kind(code)
        if kind == _USER:
            return code, frame.f_lasti, True
        frame = frame.f_back
    return None


_MODULE_CALL_FILE = os.path.join(_TORCH_DIR, "nn", "modules", "module.py")


def module_call_site(frame) -> tuple | None:
    """``(code, lasti)`` of the line that called a module, from a frame of torch's module call
    machinery (a forward hook's caller): the user's line when the user's code made the call,
    None when library code did (``nn.Sequential``'s loop, a compiled wrapper)."""
    while frame is not None and frame.f_code.co_filename == _MODULE_CALL_FILE:
        frame = frame.f_back
    if frame is None or _kind(frame.f_code) != _USER:
        return None
    return frame.f_code, frame.f_lasti


def resolve_site(code, lasti: int) -> tuple[str, int, int | None, int | None]:
    """``(filename, line, col, end_col)`` of the instruction at ``lasti`` in ``code``."""
    # Code objects compare equal across files (their equality ignores co_filename): two
    # students' byte-identical files must never share an entry, so the file is in the key.
    return _resolve_site(code, code.co_filename, lasti)


@lru_cache(maxsize=4096)
def _resolve_site(code, filename: str, lasti: int) -> tuple[str, int, int | None, int | None]:
    line, end_line, col, end_col = instruction_position(code, lasti)
    if line is not None:
        if end_line != line:
            end_col = None
        return filename, line, col, end_col
    return filename, code.co_firstlineno, None, None


def file_tree(filename: str | None) -> ast.Module | None:
    """The syntax tree of a file as ``linecache`` holds it, or None (no source, or it does
    not parse). Parsed once per text and shared by the rules that read the user's code."""
    text = "".join(linecache.getlines(filename)) if filename else ""
    return _parsed(text) if text else None


@lru_cache(maxsize=32)
def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


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
