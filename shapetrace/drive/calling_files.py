"""Which files of a project may call a class: its own file, the other files of its folder and
of the package above it, the files of the project's other packages that call it (``models/``
building what ``layers/`` defines), and the notebooks beside it (their code cells as one
module). A file whose module names another class by the class's name is left out. Nothing is
run but the imports of the package's own modules, to tell two classes of one name apart."""

from __future__ import annotations

import ast
import inspect
import os
import sys
from functools import lru_cache
from pathlib import Path

from ..base.source import file_tree
from .examples import package_base

#: how many files of the package are read for calls of a class
FILES = 40


def trees(path: Path, owner: type):
    """``(file, parsed file)`` for each file that may call ``owner`` (:func:`_package_files`),
    then the notebooks beside it that call it (their code cells, in order, as one module)."""
    for file in _package_files(path, owner):
        tree = file_tree(str(file))
        if tree is not None:
            yield file, tree
    for notebook in sorted(path.parent.glob("*.ipynb"))[:FILES]:
        text = text_of(notebook)
        if owner.__name__ + "(" in text:
            tree = _notebook_tree(text)
            if tree is not None:
                yield notebook, tree


def defines_another(tree: ast.Module, owner: type) -> bool:
    """Whether ``tree`` (a notebook's code) defines a class of ``owner``'s name with other code
    (a chapter's version that the module's differs from): its calls build that class, not
    ``owner``. The same code, collected into the module, is ``owner``."""
    from ..analysis.code import parsed

    mine = parsed(owner)
    mine = next((n for n in mine.body if isinstance(n, ast.ClassDef)), None) if mine else None
    return any(isinstance(n, ast.ClassDef) and n.name == owner.__name__
               and (mine is None or ast.dump(n) != ast.dump(mine)) for n in tree.body)


@lru_cache(maxsize=16)
def _notebook_tree(text: str) -> ast.Module | None:
    from .snippets import notebook_code

    try:
        return ast.parse(notebook_code(text))
    except (SyntaxError, ValueError):
        return None


def _package_files(path: Path, owner: type) -> list[Path]:
    """The file itself, then the other files of its folder and of the package above it, then
    the files of the project's other packages that call ``owner`` (``models/`` building what
    ``layers/`` defines). A file whose module names another class by ``owner``'s name (two
    ``EncoderLayer`` of two models) is left out; one of the other packages also when it
    cannot be imported to tell."""
    files = [path]
    folders = [path.parent]
    if (path.parent / "__init__.py").is_file() and (path.parent.parent / "__init__.py").is_file():
        folders.append(path.parent.parent)
    for folder in folders:
        files += sorted(p for p in folder.glob("*.py") if p not in files)
    name = owner.__name__
    files = [f for f in files if f == path or _names(f, owner) is not False]
    return (files + [f for f in _project_files(str(path.parent)) if f not in files
                     and name + "(" in text_of(f) and _names(f, owner)])[:FILES]


def _names(file: Path, owner: type) -> bool | None:
    """Whether the module of ``file`` names ``owner`` by its name (the same class, from the
    same file); None when the file does not call it or cannot be imported to tell."""
    if owner.__name__ + "(" not in text_of(file):
        return None
    module = imported(file, owner)
    found = getattr(module, owner.__name__, None) if module is not None else None
    if not isinstance(found, type):
        return _imports_owner(file, owner)
    return found is owner or (found.__qualname__ == owner.__qualname__
                              and _source(found) == _source(owner))


def _imports_owner(file: Path, owner: type) -> bool | None:
    """Read from ``file``'s imports, for a file that cannot be imported here (a training
    script that needs a logger not installed): whether it imports ``owner``'s name from
    ``owner``'s file (``from pkg.model.vit import VisionTransformer``, or relatively; an
    absolute name looked up from each folder above the file, for namespace packages and
    scripts run from the project's root); None when it does not import that name or the
    module it names is not found."""
    tree = file_tree(str(file))
    mine = _source(owner)
    if tree is None or not mine:
        return None
    answer = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not any(
                a.name == owner.__name__ and a.asname in (None, owner.__name__) for a in node.names):
            continue
        if node.level:
            top = file.parent
            for _ in range(node.level - 1):
                top = top.parent
            roots = [top]
        else:
            roots = list(file.parents)[:6]
        parts = (node.module or "").split(".") if node.module else []
        found = [c for root in roots for c in (root.joinpath(*parts).with_suffix(".py"),
                                               root.joinpath(*parts, "__init__.py"))
                 if parts and c.is_file()]
        if any(os.path.realpath(c) == mine for c in found):
            return True
        if found:
            answer = False
    return answer


def _source(cls: type) -> str | None:
    try:
        return os.path.realpath(inspect.getsourcefile(cls) or "")
    except (TypeError, OSError):
        return None


#: how many files of a project's other packages are read for calls of a class
_PROJECT_FILES = 300


@lru_cache(maxsize=16)
def _project_files(folder: str) -> tuple[Path, ...]:
    """The files of the packages beside ``folder``'s outermost package (the folders of the
    project's root that hold an ``__init__.py``); for a folder that is no package, the folders
    beside it (a project that imports ``layers.X`` from ``models/`` by its root on the path,
    no ``__init__.py`` anywhere); none for a file at a project's root."""
    base = Path(package_base(folder))
    namespace = str(base) == folder
    if namespace:  # the project's root is the folder above, when scripts run from there
        base = base.parent
        if (Path(folder) / "__init__.py").exists() or base == base.parent \
                or not any(base.glob("*.py")):
            return ()
    found: list[Path] = []
    for top in sorted(base.iterdir()):
        if not top.is_dir() or top.name.startswith((".", "__")) or str(top) == folder:
            continue
        if not namespace and not (top / "__init__.py").is_file():
            continue
        for directory, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            found += [Path(directory) / n for n in sorted(names) if n.endswith(".py")]
            if len(found) >= _PROJECT_FILES:
                return tuple(found[:_PROJECT_FILES])
    return tuple(found)


@lru_cache(maxsize=512)
def text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def imported(file: Path, owner: type | None = None):
    """The module of ``file`` as its package imports it (``pkg.sub.module``), the packages
    standing in for ``owner``'s file (not installed here) standing in for it too; None when it
    is outside any package or cannot be imported."""
    import contextlib
    import importlib

    from .absent import standing_in

    folder = str(file.parent)
    base = package_base(folder)
    if base == folder or file.suffix != ".py":
        return None
    dotted = str(file.relative_to(base))[:-3].replace("/", ".").removesuffix(".__init__")
    if dotted in sys.modules:
        return sys.modules[dotted]
    added = base not in sys.path
    if added:
        sys.path.insert(0, base)
    standing = getattr(sys.modules.get(owner.__module__), "__shapetrace_absent__", ()) \
        if owner is not None else ()
    try:
        with standing_in(standing) if standing else contextlib.nullcontext():
            return importlib.import_module(dotted)
    except Exception:  # noqa: BLE001 - a module of the package that cannot be imported
        return None
    finally:
        if added and base in sys.path:
            sys.path.remove(base)
