"""Where a file's import looks: the folders put on ``sys.path`` for it, and the user's
modules taken out of ``sys.modules`` (another student's module by the same name, a package
half-imported by a failed try). Installed packages and Python's own are never touched."""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
from contextlib import contextmanager
from pathlib import Path

from ..base.source import is_library_file


def drop_user_modules(names) -> None:
    """Take the user's modules among ``names`` out of ``sys.modules`` (a package whose
    ``__init__`` failed leaves its namespace subpackages behind, which then find no parent)."""
    for name in names:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None) or next(iter(package_folders(module)), None)
        if where is not None and not is_library_file(str(where), installed_is_library=True):
            sys.modules.pop(name, None)


def folders_first(root: Path | None, folder: Path) -> tuple:
    """The two folders to put on ``sys.path``, the one to come first last: the file's folder
    first, then its project's root; the root first when the folder is a package (``pkg/pkg.py``
    importing ``pkg.rotary`` finds the package, not itself)."""
    if root is not None and (folder / "__init__.py").is_file():
        return on_sys_path(folder), on_sys_path(root, front=True)
    return on_sys_path(root), on_sys_path(folder)


@contextmanager
def on_sys_path(directory: Path | None, front: bool = False):
    """``directory`` on ``sys.path`` while the block runs (first, when ``front``: even when it is
    there already, further down)."""
    if directory is None:
        yield
        return
    entry = str(directory)
    added = entry not in sys.path or (front and sys.path[0] != entry)
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


@contextmanager
def argv_of(path: Path):
    """``sys.argv`` as ``python path`` gives it, with no argument, while the block runs: a file
    that parses its arguments where it is imported (``args = parser.parse_args()`` at its top)
    reads its own defaults, not shapetrace's flags."""
    saved = sys.argv
    sys.argv = [str(path)]
    try:
        yield
    finally:
        sys.argv = saved


def forget_shadowed(directory: Path) -> None:
    """Drop user modules that a file in ``directory`` would shadow on import.

    Two students' ``helpers.py`` share the name ``helpers``, and two students' ``models/``
    folders (with or without ``__init__.py``) the name ``models``: without this, the second
    student's ``import helpers`` or ``from models.attn import ...`` would get the first one's
    module from ``sys.modules``.
    """
    library = library_dirs()
    try:  # one listing, not two stat calls for each of the hundreds of top-level modules
        entries = os.listdir(directory)
    except OSError:
        return
    names = {e[:-3] if e.endswith(".py") else e for e in entries}
    for name in [n for n in names if n in sys.modules]:  # the folder's few, not sys.modules'
        if not ((directory / f"{name}.py").is_file() or (directory / name).is_dir()):
            continue
        found = homes(sys.modules.get(name))
        if not found or any(str(home).startswith(library) for home in found):
            continue  # never drop the standard library or an installed package
        if directory not in {home.parent for home in found}:
            for other in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
                sys.modules.pop(other, None)


def homes(module) -> list[Path]:
    """Where a top-level module lives: its file, its package's folder, or every folder of a
    namespace package (a ``models/`` without ``__init__.py``)."""
    filename = getattr(module, "__file__", None)
    if filename:
        resolved = Path(filename).resolve()
        return [resolved.parent if resolved.name == "__init__.py" else resolved]
    try:
        return [Path(p).resolve() for p in package_folders(module)]
    except (TypeError, OSError):
        return []


def package_folders(module) -> list:
    """The folders of a package as last computed (empty for a plain module). A namespace
    package's ``__path__`` computes itself again when read whole (its length, its items),
    looking its parent up in ``sys.modules``: a parent taken out already raises KeyError there,
    so its last computed list is read instead."""
    paths = getattr(module, "__path__", None)
    if paths is None:
        return []
    try:
        return list(getattr(paths, "_path", paths))
    except Exception:  # noqa: BLE001 - a path that cannot be read: no folders known
        return []


@functools.lru_cache(maxsize=1)  # a fact of this interpreter and this install
def library_dirs() -> tuple[str, ...]:
    """Directories of Python itself, installed packages and shapetrace: not the user's code."""
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    dirs = {str(Path(sysconfig.get_paths()[key]).resolve()) for key in keys}
    dirs.add(str(Path(__file__).resolve().parent.parent))  # shapetrace itself
    return tuple(d + os.sep for d in dirs)


#: ``from utils import IGNORE_ID`` finding a ``utils`` without the name
_LACKED = re.compile(r"cannot import name '(\w+)' from '(\w+)'")
#: the files of the project read for the module meant, at most
_MOST_READ = 200


def folder_defining(exc: BaseException, folder: Path, root: Path | None) -> Path | None:
    """The one folder of the project holding a module of the name an import found elsewhere in
    the project, that defines the name it lacked: ``from utils import IGNORE_ID`` meaning
    ``src/utils/utils.py``, which the project's scripts put on ``PYTHONPATH``, where the package
    ``src/utils/`` was found. Searched under ``root`` (the project's root) or the folder that
    holds both the importing file's ``folder`` and the module found. None when no such module,
    or more than one, is there."""
    found = _LACKED.search(str(exc)) if type(exc) is ImportError else None
    where = getattr(exc, "path", None)
    if found is None or where is None or is_library_file(str(where), installed_is_library=True):
        return None
    top = root or Path(os.path.commonpath([folder.resolve(), Path(where).resolve().parent]))
    if len(top.parts) < 3:  # no project around both: not searched
        return None
    name, module = found.groups()
    defines = re.compile(rf"^(?:{name}\s*[:=]|(?:async\s+)?def {name}\b|class {name}\b)", re.M)
    folders = set()
    for count, candidate in enumerate(top.rglob(f"{module}.py")):
        if count >= _MOST_READ:
            return None
        if candidate.resolve() == Path(where).resolve() or any(
                part.startswith(".") or part in ("site-packages", "node_modules") for part in candidate.parts):
            continue
        try:
            text = candidate.read_text(encoding="utf-8", errors="ignore")
        except OSError:
            continue
        if defines.search(text):
            folders.add(candidate.parent)
    return folders.pop() if len(folders) == 1 else None
