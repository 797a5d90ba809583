"""Values a project's command line gives by default, for the arguments its code hands on from
the parsed command line.

A training script builds its model from its options (``VisionTransformer(...,
forward_mul=self.args.forward_mul)``), and the options' defaults are written where they are
declared (``parser.add_argument("--forward_mul", type=int, default=2)``). :func:`default_for`
reads them (``ast``; nothing is run) from the files of the caller's folder, of the folder above
its outermost package (the project's scripts) and of the project's packages: the value of the
option whose destination is the attribute read (``--forward-mul`` and ``dest="forward_mul"``
both are ``forward_mul``). ``store_true`` options default to False, ``store_false`` ones to
True. An option declared twice with two defaults says nothing.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from pathlib import Path

from ..base.source import file_tree
from .examples import package_base

#: how many files are read for the options of one project
_FILES = 300


def default_for(file: Path, name: str) -> ast.expr | None:
    """The expression of the default the project's command line gives the option ``name``
    (for a call in ``file``); None when none does, or two do differently."""
    found = _defaults(str(file.parent)).get(name)
    return found[0] if found is not None and len(found) == 1 else None


@lru_cache(maxsize=16)
def _defaults(folder: str) -> dict[str, tuple]:
    """Option destination -> the distinct default expressions declared for it (as source)."""
    found: dict[str, dict[str, ast.expr]] = {}
    for path in _files(folder):
        tree = file_tree(path)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "add_argument":
                declared = _declared(node)
                if declared is not None:
                    name, default = declared
                    found.setdefault(name, {})[ast.dump(default)] = default
    return {name: tuple(values.values()) for name, values in found.items()}


def _declared(call: ast.Call) -> tuple[str, ast.expr] | None:
    """``(destination, default expression)`` of one ``add_argument`` call; None without a
    default."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    dest = keywords.get("dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        name = dest.value
    else:
        long = [f for f in flags if f.startswith("--")]
        plain = [f for f in flags if not f.startswith("-")]
        name = (long[0][2:] if long else plain[0] if plain else "").replace("-", "_")
    if not name.isidentifier():
        return None
    default = keywords.get("default")
    action = keywords.get("action")
    if default is None and isinstance(action, ast.Constant) and action.value in ("store_true",
                                                                                   "store_false"):
        default = ast.Constant(action.value == "store_false")
    return (name, default) if default is not None else None


def _files(folder: str) -> list[str]:
    """The ``.py`` files that declare options: the folder's, the project scripts' (above the
    outermost package) and the project's packages', at most :data:`_FILES`."""
    out: list[str] = []
    base = package_base(folder)
    for directory in dict.fromkeys((folder, base)):
        out += sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".py"))
    for top in sorted(os.listdir(base)):
        root = os.path.join(base, top)
        if not os.path.isfile(os.path.join(root, "__init__.py")):
            continue
        for directory, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            out += [os.path.join(directory, n) for n in sorted(names) if n.endswith(".py")]
            if len(out) >= _FILES:
                break
    return [p for p in list(dict.fromkeys(out))[:_FILES] if _declares(p)]


def _declares(path: str) -> bool:
    try:
        return "add_argument" in Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
