"""Turn a TARGET string into the nn.Module classes it names.

Three forms: ``path/to/file.py`` (every nn.Module subclass defined in that file, in source
order), ``path/to/file.py::Name`` (``Outer.Inner`` for a nested class) and
``package.module::Name``. A file is imported by path under a module name of its own, with its
directory on ``sys.path`` while it imports (so ``from helpers import ...`` finds its siblings)
and registered in ``sys.modules`` (so dataclasses, pickling and ``inspect`` work on it). A file
inside a package (folders with ``__init__.py``, or under a folder a ``pyproject.toml``,
``setup.py`` or ``setup.cfg`` marks) is imported as its package imports it: the folder above
the package is on ``sys.path`` too, and a file with relative imports (``from .utils import
...``) is a module of its package (``_home``).

Every failure is one line: a :class:`UsageError` for a target string that names nothing, a
:class:`TargetError` for a file or module that cannot be imported or holds no such class.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import NoModuleClasses, TargetError, UsageError
from ..base.source import innermost_user_frame
from .absent import (distribution, lacking_module, lacking_name, missing_package, native_library,
                     refusing_module, standing_in, unversioned)
from .devices import needs_gpu
from .syspath import (argv_of, drop_user_modules, folder_defining, folders_first, forget_shadowed,
                      on_sys_path)
from .toplevel import failed_at_top, run_piecewise

_FORMS = "path/to/file.py, path/to/file.py::Name, a notebook.ipynb[::Name] or package.module::Name"


@dataclass(frozen=True)
class Target:
    """One module class to check. ``display`` is what reports show: ``attention.py::Head``."""

    spec: str
    cls: type
    display: str
    #: The file's own sizes when its module-level configuration could not be set to the probe
    #: sizes (``n_embd = 384`` with ``head_size = 50``): run there, named from that config.
    own_dims: dict | None = None
    #: Packages its file imports that are not installed, imported as placeholders (``absent``).
    absent: tuple[str, ...] = ()
    #: Top-level statements of its file that raised and were passed over (``toplevel``).
    passed_over: tuple[str, ...] = ()


def resolve_targets(spec: str, *, root: str | os.PathLike | None = None,
                    dims=None, stand_in: bool = True) -> list[Target]:
    """The nn.Module classes that ``spec`` names, in source order.

    A relative file path is taken relative to ``root`` (a config file's directory; default the
    working directory), and ``root`` is on ``sys.path`` while a ``package.module`` imports.
    Displays keep the path as the user wrote it. With ``dims`` (probe sizes), a file's
    module-level configuration (``n_embd = 384``) is set to them as it loads (``_config_at``).
    ``stand_in``: a package the file imports and this machine lacks stands in (``absent``),
    else the file cannot be imported.
    """
    spec = spec.strip()
    base = Path(root) if root is not None else Path.cwd()
    location, sep, name = spec.partition("::")
    location = location.strip()
    name = name.strip()
    if not location or (sep and not name):
        raise UsageError(f"target {spec!r}: expected {_FORMS}")
    if "::" in name:
        raise UsageError(f"target {spec!r}: more than one '::'; expected {_FORMS}")

    if _looks_like_path(location, base):
        module = _import_file(location, base, dims, stand_in)
        where = location
    elif sep:
        module = _import_module(location, base)
        where = location
    else:
        raise UsageError(f"target {spec!r}: no such file; expected {_FORMS}")

    own = getattr(module, "__shapetrace_own_dims__", None)
    absent = getattr(module, "__shapetrace_absent__", ())
    passed = getattr(module, "__shapetrace_passed_over__", ())
    if name:
        cls = _lookup(module, name, where)
        return [Target(spec, cls, f"{where}::{name}", own, absent, passed)]
    classes = _module_classes(module)
    if not classes:
        raise NoModuleClasses(f"no nn.Module subclasses defined in {where}")
    return [Target(spec, cls, f"{where}::{class_name(module, cls)}", own, absent, passed)
            for cls in classes]


def class_name(module, cls: type) -> str:
    """The name ``cls`` is reached by in ``module``: its qualified name, or, for a class a
    decorator made inside a function (``persistent_class.<locals>.Decorator`` standing for
    ``UNetBlock``), the module-level name it is bound to, which ``file.py::Name`` finds."""
    if "<locals>" not in cls.__qualname__:
        return cls.__qualname__
    return next((name for name, value in vars(module).items() if value is cls and name.isidentifier()),
                cls.__qualname__)


def _looks_like_path(location: str, base: Path) -> bool:
    return (location.endswith(".py") or "/" in location or os.sep in location
            or (base / location).exists())


# Importing ------------------------------------------------------------------------------------


def _import_file(location: str, base: Path, dims=None, stand_in: bool = True):
    path = Path(location).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.exists():
        raise UsageError(f"no such file: {location}")
    notebook = None  # the folder of a notebook, whose cells are imported as a module
    if path.suffix == ".ipynb" and path.is_file():
        notebook, path = path.resolve().parent, _notebook_module(path.resolve())
    if path.is_dir() or path.suffix != ".py":
        raise UsageError(f"not a Python file: {location} (expected {_FORMS})")
    path = path.resolve()
    mtime = path.stat().st_mtime_ns
    sizes = "" if dims is None else repr(sorted(dict(dims).items()))
    digest = hashlib.sha1((str(path) + sizes).encode()).hexdigest()[:10]
    module_name = f"_shapetrace_target_{_identifier(path.stem)}_{digest}"

    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"cannot read {location}: {exc}") from None
    try:  # parsed once, here: a syntax error is one line, and the tree gives the class order
        tree = ast.parse(source, str(path))
    except SyntaxError as exc:
        raise TargetError(_syntax_message(exc, path, location)) from None
    home = _home(path, tree)
    if home.package:  # ``from .utils import ...``: imported inside its package
        module_name = f"{home.package}.{module_name}"
    cached = sys.modules.get(module_name)
    if cached is not None and getattr(cached, "__shapetrace_mtime__", None) == mtime \
            and (stand_in or not getattr(cached, "__shapetrace_absent__", ())):
        return cached
    order = _class_lines(tree)
    config = None
    if dims is not None:
        from .modconfig import config_at

        config = config_at(source, dims, tree=tree)  # may rewrite the tree
        if config is not None:
            code = compile(config.tree, str(path), "exec", dont_inherit=True)

    forget_shadowed(path.parent)
    if home.root is not None:
        forget_shadowed(home.root)
    above = None  # a folder above that holds a module the file imports by its bare name
    defining = None  # the folder of the project's module meant by a name found elsewhere
    standing: list[str] = []  # packages not installed, imported as placeholders (``absent``)
    first = None  # the import's own failure, said when placeholders do not help
    piecewise = False  # its own top level failed: run again statement by statement (toplevel)
    before = set(sys.modules)
    while True:
        try:
            later, first_on_path = folders_first(home.root, notebook or path.parent)
            with on_sys_path(above), later, first_on_path, on_sys_path(defining, front=True), \
                    (standing_in(standing) if standing else nullcontext()), argv_of(path):
                if home.package:
                    _parent_package(home)
                spec = importlib.util.spec_from_file_location(module_name, path)
                module = importlib.util.module_from_spec(spec)
                module.__shapetrace_mtime__ = mtime
                module.__shapetrace_source_order__ = order
                sys.modules[module_name] = module
                if piecewise:
                    module.__file__ = str(path)
                    module.__shapetrace_passed_over__ = tuple(run_piecewise(
                        config.tree if config is not None else tree, str(path), module.__dict__))
                    if config is not None:
                        config.finish(module)
                elif config is None:
                    spec.loader.exec_module(module)
                else:
                    module.__file__ = str(path)
                    exec(code, module.__dict__)  # noqa: S102 - the user's own file, as import runs it
                    config.finish(module)
            module.__shapetrace_absent__ = tuple(standing)
            return module
        except BaseException as exc:
            sys.modules.pop(module_name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            imported = _imported_elsewhere(path) if config is None else None
            if imported is not None:  # its package's own import ran it (a registry filled
                imported.__shapetrace_mtime__ = mtime  # there), and running it again as the
                imported.__shapetrace_source_order__ = order  # target failed: that module
                imported.__shapetrace_absent__ = tuple(standing)
                return imported
            drop_user_modules(set(sys.modules) - before)  # half-imported: the next try anew
            if above is None:  # ``import utils`` of a file in model/, with utils.py beside model/
                above = _folder_holding(exc, path.parent) or _folder_added(exc, path.parent, tree)
                if above is not None:
                    continue
            if defining is None:  # ``from utils import IGNORE_ID``: the utils.py that defines it
                defining = folder_defining(exc, path.parent, home.root)
                if defining is not None:
                    continue
            if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == path:
                raise TargetError(_syntax_message(exc, path, location)) from None  # found compiling
            if isinstance(exc, SyntaxError):  # in a file the target imports
                raise TargetError(f"cannot import {location}: {_syntax_message(exc, path, location)}") from None
            folders = [f for f in (path.parent, home.root, above) if f is not None]
            if first is None:
                first = _keeping(TargetError(_import_message(exc, location, path, folders)), exc)
            top = (unversioned(exc) or missing_package(exc, folders) or refusing_module(exc, standing)
                   or lacking_name(exc) or lacking_module(exc) or native_library(exc)) if stand_in else None
            if top is not None and top not in standing and len(standing) < _MOST_STANDING:
                standing.append(top)
                continue
            if not piecewise and isinstance(exc, OSError) and failed_at_top(exc, str(path)) is not None:
                piecewise = True  # a file or the network its own top level reads is not here:
                continue  # its definitions, one statement at a time
            if needs_gpu(exc):  # what stops the import, once what is missing stands in
                raise _keeping(TargetError(f"{_import_message(exc, location, path, folders)}: it needs a "
                                           f"GPU to import, which this machine does not have"), exc) from None
            raise first from None


def _notebook_module(path: Path) -> Path:
    """The module a notebook's code cells make (``snippets.notebook_module``), written once per
    content in a folder of its own under the temporary directory (never beside the notebook)."""
    import tempfile

    from . import snippets

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"cannot read {path}: {exc}") from None
    writer = Path(snippets.__file__).read_bytes()  # written anew when the way of writing changes
    digest = hashlib.sha1((str(path) + text).encode() + writer).hexdigest()[:12]
    out = Path(tempfile.gettempdir()) / "shapetrace-notebooks" / digest / f"{_identifier(path.stem)}.py"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(snippets.notebook_module(text, path.name), encoding="utf-8")
    return out


#: packages not installed that one file may be imported without
_MOST_STANDING = 8


def _folder_holding(exc: BaseException, folder: Path) -> Path | None:
    """A folder up to three levels above ``folder`` that holds the module ``exc`` did not find
    (``utils.py`` or a ``utils/`` package): the project's root, where its code is run from; or
    the folder above the package (with or without ``__init__.py``) that ``folder`` is in."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not name or name.startswith((".", "_shapetrace")):
        return None
    top = name.split(".")[0]
    for above in list(folder.parents)[:3]:
        if (above / f"{top}.py").is_file() or (above / top / "__init__.py").is_file():
            return above
    for above in folder.parents:  # a package without __init__.py that holds the file itself
        if above.name == top:     # (``src/pkg/model/x.py`` importing ``pkg.model.y``)
            return above.parent
    if folder.name == top:
        return folder.parent
    return None


def _folder_added(exc: BaseException, folder: Path, tree: ast.Module) -> Path | None:
    """A folder the file adds to ``sys.path`` by a relative path (``sys.path.append('utils')``,
    meant from the file's own folder, where its code is run from) that holds the module ``exc``
    did not find."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not name or name.startswith((".", "_shapetrace")):
        return None
    top = name.split(".")[0]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "insert") and ast.unparse(node.func.value) == "sys.path"
                and node.args and isinstance(node.args[-1], ast.Constant)
                and isinstance(node.args[-1].value, str)):
            continue
        added = Path(node.args[-1].value)
        if added.is_absolute():
            continue
        candidate = (folder / added).resolve()
        if (candidate / f"{top}.py").is_file() or (candidate / top / "__init__.py").is_file():
            return candidate
    return None


def _import_module(dotted: str, base: Path):
    if not all(part.isidentifier() for part in dotted.split(".")):
        raise UsageError(f"target {dotted!r}: not a file or a module path; expected {_FORMS}")
    try:
        with on_sys_path(base):
            return importlib.import_module(dotted)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, ModuleNotFoundError) and exc.name and (dotted + ".").startswith(exc.name + "."):
            raise TargetError(f"cannot import module {dotted!r}: no module named {exc.name!r} "
                              f"(run from the directory that contains it, or install it)") from None
        if isinstance(exc, SyntaxError):
            raise TargetError(_syntax_message(exc, None, dotted)) from None
        raise _keeping(TargetError(_import_message(exc, dotted, None)), exc) from None


@dataclass(frozen=True)
class _Home:
    """Where a file's imports start: ``root`` (the folder above its outermost package, or the
    project folder a ``pyproject.toml``/``setup.py``/``setup.cfg`` marks; None for a loose file)
    goes on ``sys.path``; ``package`` (``pkg.sub``) is the package its relative imports are
    from, set only for a file that has any (``from .utils import ...``)."""

    root: Path | None = None
    package: str = ""
    folders: tuple[Path, ...] = ()  # the package's folders, outermost first


_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def _home(path: Path, tree: ast.Module) -> _Home:
    """Where ``path`` is imported from, as its package imports it (see ``_Home``)."""
    folder = path.parent
    top = folder
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    relative = any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))
    if top == folder and not relative and _imports_own_folder(tree, folder):
        # ``from model.utils import ...`` in model/encoder.py, model/ without __init__.py: the
        # folder is a package its code names (whose model.py would shadow it from the folder)
        return _Home(folder.parent, folder.name, (folder,))
    if top == folder:  # not in a package: a project folder above it, if one is marked
        top = next((above for above in list(folder.parents)[:4]
                    if any((above / name).is_file() for name in _PROJECT_FILES)), None)
        if top is None and relative and folder.name.isidentifier() and folder.parent != folder:
            top = folder.parent  # ``from .sibling import ...`` in a folder run as a package
        if top is None:
            return _Home()
    parts = folder.relative_to(top).parts
    deepest = max((node.level for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)), default=0)
    while relative and deepest > len(parts) and top.parent != top and top.name.isidentifier():
        top = top.parent  # ``from ..functions import`` past a folder without ``__init__.py``
        parts = folder.relative_to(top).parts
    if not (relative and parts and all(part.isidentifier() for part in parts)):
        return _Home(top)
    folders = tuple(top.joinpath(*parts[:i + 1]) for i in range(len(parts)))
    return _Home(top, ".".join(parts), folders)


def _imports_own_folder(tree: ast.Module, folder: Path) -> bool:
    """Whether the file imports modules of its own folder by the folder's name as a package
    (``from model.utils import x`` in model/, which has no ``__init__.py``)."""
    name = folder.name
    if not name.isidentifier() or (folder / "__init__.py").is_file() or folder.parent == folder:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            dotted = [node.module]
        elif isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        else:
            continue
        if any(d.startswith(name + ".") and (folder / (d.split(".")[1] + ".py")).is_file()
               for d in dotted):
            return True
    return False


def _parent_package(home: _Home) -> None:
    """Import the package ``home`` names (its ``__init__.py`` files run, as an import of the
    module would run them); when one of them fails (a package that imports every module, one
    of which needs what is not installed), the folders stand as packages whose ``__init__``
    did not run, so that the file's own relative imports still find their siblings."""
    try:
        found = importlib.import_module(home.package)
        if str(home.folders[-1]) in (getattr(found, "__path__", None) or ()):
            return
        sys.modules.pop(home.package, None)  # a module of that name found first (model.py in
    except BaseException as exc:  # noqa: BLE001 - model/): the folder stands as the package
        if isinstance(exc, KeyboardInterrupt) or unversioned(exc):
            raise  # (its own version asked for: given one, the package imports as it is)
    names = home.package.split(".")
    for i, folder in enumerate(home.folders):
        name = ".".join(names[: i + 1])
        existing = sys.modules.get(name)
        if existing is not None and getattr(existing, "__path__", None) is not None:
            continue
        init = folder / "__init__.py"
        if init.is_file():
            spec = importlib.util.spec_from_file_location(
                name, init, submodule_search_locations=[str(folder)])
        else:  # a folder without ``__init__.py`` in a marked project: a namespace package
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(folder)]
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        if i:
            setattr(sys.modules[".".join(names[:i])], names[i], module)


def _imported_elsewhere(path: Path):
    """The module of ``path`` as its package's own import made it while the target imported
    (``fms.models.llama``, imported by ``fms/models/__init__.py``, which the file's own ``import
    fms`` ran), whole, or None: the target, run again under another name, registers its classes
    a second time (``Variant micro already registered``)."""
    for name, module in list(sys.modules.items()):
        found = getattr(module, "__file__", None)
        spec = getattr(module, "__spec__", None)
        if not found or name.rpartition(".")[2].startswith("_shapetrace_target_") \
                or getattr(spec, "_initializing", False):
            continue
        try:
            if Path(found).resolve() == path:
                return module
        except OSError:
            continue
    return None


def _identifier(stem: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in stem)


# Errors ---------------------------------------------------------------------------------------


def _syntax_message(exc: SyntaxError, target: Path | None, location: str) -> str:
    filename = exc.filename or location
    if target is not None and Path(filename).resolve() == target:
        shown = location
    else:
        shown = _shown(filename)
    where = f"{shown}:{exc.lineno}" if exc.lineno else shown
    return f"syntax error in {where}: {exc.msg}"


def _import_message(exc: BaseException, location: str, target: Path | None,
                    folders: list[Path] = ()) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    missing = _not_installed(exc, folders)
    unbuilt = None if missing else _not_built(exc, folders)
    if missing:
        what += f" (a package it needs is not installed: pip install {missing})"
    elif unbuilt:
        what += (f" (a compiled extension of the project that is not built: build it first, "
                 f"with the setup.py in {unbuilt})")
    elif isinstance(exc, SystemExit):
        what = f"it called exit({exc.code!r}) while importing; put script code under " \
               f"if __name__ == '__main__':"
    elif isinstance(exc, ImportError) and "no known parent package" in text:
        what += " (import it as package.module::Name instead)"
    frame = _user_frame(exc)
    if frame is None:
        return f"cannot import {location}: {what}"
    filename, lineno = frame
    shown = location if target is not None and Path(filename).resolve() == target else _shown(filename)
    return f"cannot import {location}: {what} (at {shown}:{lineno})"


def _not_installed(exc: BaseException, folders: list[Path]) -> str | None:
    """The package to install when ``exc`` is a module that is neither installed nor one of
    the user's own files (``absent.missing_package``), else None."""
    top = missing_package(exc, folders)
    return None if top is None else distribution(top)


def _not_built(exc: BaseException, folders: list[Path]) -> str | None:
    """The folder of the user's own package whose missing module is built from source (a
    ``setup.py`` beside ``.pyx``, ``.c`` or ``.cpp`` files there), else None."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not name or "." not in name:
        return None
    parts = name.split(".")[:-1]
    for folder in folders:
        package = folder.joinpath(*parts)
        if (package / "setup.py").is_file() and any(
                next(package.glob(pattern), None) for pattern in ("*.pyx", "*.c", "*.cpp")):
            return _shown(str(package)) if package.is_absolute() else str(package)
        parent = package.parent
        if parent != folder and (parent / "setup.py").is_file() and any(
                next(parent.glob(pattern), None) for pattern in ("*.pyx", "*.c", "*.cpp")):
            return _shown(str(parent))
    return None


def _user_frame(exc: BaseException) -> tuple[str, int] | None:
    """The innermost traceback frame in the user's code (not Python's or a library's)."""
    return innermost_user_frame(exc.__traceback__, installed_is_library=True)


def _shown(filename: str) -> str:
    from ..base.source import display_path

    return display_path(filename) or filename


# Finding classes ------------------------------------------------------------------------------


def _class_lines(tree: ast.Module) -> dict[str, int]:
    """Top-level class name -> line, for the classes a file defines."""
    return {node.name: node.lineno for node in tree.body if isinstance(node, ast.ClassDef)}


def _module_classes(module) -> list[type]:
    """nn.Module subclasses defined (not imported) in ``module``, in source order. A base class
    without a ``forward`` (or whose ``forward`` only raises NotImplementedError) whose
    subclasses there define one runs nothing and is left out; named with ``::Name`` it is still
    checked."""
    from torch import nn

    order = getattr(module, "__shapetrace_source_order__", None) or {}
    found: dict[type, None] = {}
    for value in list(vars(module).values()):
        if (isinstance(value, type) and issubclass(value, nn.Module)
                and value.__module__ == module.__name__):
            found.setdefault(value)
    bases = {base for cls in found if getattr(cls, "forward", None) is not nn.Module.forward
             for base in cls.__mro__[1:]}
    found = {cls: None for cls in found
             if not (cls in bases and (getattr(cls, "forward", None) is nn.Module.forward
                                       or _abstract_forward(cls)))}

    def line(cls: type) -> float:
        name = class_name(module, cls)
        if name in order:
            return order[name]
        try:
            import inspect

            return inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            return float("inf")

    return sorted(found, key=line)


def _abstract_forward(cls: type) -> bool:
    """Whether ``cls``'s own forward only raises NotImplementedError (a base class whose
    subclasses of the file implement it, as ``abc`` would have it)."""
    import inspect

    from ..analysis.code import function_def, parsed

    forward = cls.__dict__.get("forward")
    body = function_def(parsed(forward), "forward") if inspect.isfunction(forward) else None
    if body is None:
        return False
    statements = [n for n in body.body
                  if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(statements) != 1 or not isinstance(statements[0], ast.Raise):
        return False
    raised = statements[0].exc
    raised = raised.func if isinstance(raised, ast.Call) else raised
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _lookup(module, name: str, where: str) -> type:
    from torch import nn

    value: object = module
    for i, part in enumerate(name.split(".")):
        if not part.isidentifier() or not hasattr(value, part):
            available = ", ".join(class_name(module, c) for c in _module_classes(module)) or "none"
            missing = ".".join(name.split(".")[: i + 1])
            raise TargetError(f"no class {missing!r} in {where}; nn.Module classes there: {available}")
        value = getattr(value, part)
    if not (isinstance(value, type) and issubclass(value, nn.Module)):
        kind = "a class" if isinstance(value, type) else f"a {type(value).__name__}"
        raise TargetError(f"{name!r} in {where} is {kind}, not an nn.Module subclass")
    return value


def _keeping(error: TargetError, original: BaseException) -> TargetError:
    """The one-line error, holding the user's exception for ``--debug`` without chaining it."""
    error.original = original
    return error
