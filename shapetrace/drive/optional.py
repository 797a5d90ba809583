"""A forward that needs a package its file imports only when it can.

Files that support a fast path write ``try: import xformers`` / ``except ImportError: pass``
and call ``xformers.ops...`` in the branch a constructor default selects. Without the package,
the forward raises ``NameError: name 'xformers' is not defined``: not a bug of the code (it
runs where the package is installed) and not something shapetrace may report as one. Such a
forward is a target error that names the package and the command that installs it; a
``NameError`` for any other name (a typo, a variable used before it is set) stays the code's
own error.

Pure standard library: the file's source is read with ``ast``, nothing is run.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: exceptions whose handler around an import makes that import optional
_SKIPPED = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def missing_optional(exc: BaseException) -> tuple[str, str] | None:
    """``(name, module)`` when ``exc`` is a ``NameError`` for a name that the file the
    forward raised in binds only by an import inside a ``try`` whose handler skips an
    ``ImportError``, and that import failed (the name is not in the file's globals); else
    None. ``module``: the module the import named (``xformers.ops`` for
    ``import xformers.ops``)."""
    if not isinstance(exc, NameError) or isinstance(exc, UnboundLocalError):
        return None
    name = getattr(exc, "name", None)
    frame = _raising_frame(exc)
    if not name or frame is None or name in frame.f_globals:
        return None
    filename = frame.f_code.co_filename
    imported = optional_imports(filename).get(name)
    if imported is None:
        return None
    top = imported.split(".")[0]
    if top in sys.modules and sys.modules[top] is not None:
        return None  # the package is there: the name is unbound for another reason
    return name, imported


def needs_package(name: str, module: str) -> str:
    """The target error for a forward that ran into ``name`` left unbound by the failed
    optional import of ``module``."""
    from .absent import distribution

    return (f"the forward needs the package {module.split('.')[0]!r}, which the file imports "
            f"only when it is installed (so {name!r} is not defined here): pip install "
            f"{distribution(module)}, or build the class so that it takes its other path")


def optional_imports(filename: str) -> dict[str, str]:
    """``{bound name: imported module}`` for the imports of ``filename`` that sit inside a
    ``try`` whose handlers skip an ``ImportError`` (module level and nested alike)."""
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or not any(_skips_import_error(h) for h in node.handlers):
            continue
        for statement in node.body:
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Import):
                    for alias in inner.names:
                        bound = alias.asname or alias.name.split(".")[0]
                        found.setdefault(bound, alias.name if alias.asname else bound)
                elif isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                    for alias in inner.names:
                        found.setdefault(alias.asname or alias.name, inner.module)
    return found


def _skips_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return True  # a bare except
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(isinstance(n, (ast.Name, ast.Attribute)) and
               (n.id if isinstance(n, ast.Name) else n.attr) in _SKIPPED for n in names)


def _raising_frame(exc: BaseException):
    """The innermost frame of ``exc``'s traceback: where the name was looked up."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame


__all__ = ["missing_optional", "needs_package", "optional_imports"]
