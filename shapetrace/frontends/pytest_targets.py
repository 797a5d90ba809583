"""The pytest plugin's target items, named without importing the targets where possible.

``item_arguments`` turns the config's targets into the arguments of the plugin's items. The
plugin names one item per class of a ``path/to/file.py`` target. Importing every
submission in every pytest-xdist worker only to learn those names costs more than grading
half of them, so the names are read from the file's syntax tree, and the file is imported
only when one of its items runs. The answer must be the one importing would give
(``drive.targets.resolve_targets``: the nn.Module subclasses defined in the file, in source order,
less a base class without ``forward`` whose subclasses define one), so anything that could
make the two differ gives None, and the caller imports the file as before:

- a class defined anywhere but at the top level, a decorator other than ``dataclass``, a
  metaclass or other class keywords, ``__init_subclass__``;
- a base that is not a class defined above it, nor a name imported from torch, typing, abc,
  enum, dataclasses or collections (or a builtin), or a module of that name next to the file;
- a class name bound twice (rebound, deleted, aliased by ``global``), ``from x import *``,
  ``globals()``, ``exec``, ``eval``, ``setattr``, ``type(name, bases, ns)``, an attribute
  assigned on a class (``Attention.forward = ...``), ``sys.modules``;
- a class with two bases that could each bring its ``forward``;
- a file that does not exist, cannot be read or does not parse, or defines no module class
  (importing it gives the one-line error).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import sys
from pathlib import Path

#: Packages whose classes may be bases: loaded by shapetrace itself or by Python, never a
#: student's file (unless one of that name sits next to the target, which is checked).
_KNOWN_ROOTS = frozenset({"torch", "typing", "abc", "enum", "dataclasses", "collections"})
_DYNAMIC = frozenset({"globals", "exec", "eval", "__import__", "setattr", "delattr"})


def item_arguments(project):
    """(location or None, item name, "item" | "error", arguments) for every item of the
    project's targets. A target whose names can be read (``names_read``) is imported when the
    first of its items runs; any other is imported now, and one that cannot be imported becomes
    one "error" item (at the top, None, for a whole file), as does a spec that names nothing."""
    from ..drive.isolation import Isolation
    from ..drive.jobs import jobs_from_config

    for entry, job in zip(project.targets, jobs_from_config(project)):  # one job per entry
        isolation = Isolation()  # what the target imports stays out of the course's tests
        points = _points(job, entry)
        visibility = getattr(job, "visibility", None)
        names = names_read(job)
        if names is not None:
            location = job.spec.partition("::")[0].strip()
            imported = ImportedOnFirstRun(job, names)
            for name in names:
                yield location, name, "item", dict(job=job, target=None, isolation=isolation,
                                                   points=points, visibility=visibility,
                                                   lazy=(imported, name))
            continue
        try:
            with isolation:
                targets = job.resolve()
        except Exception as exc:  # one broken target fails its own item
            location, _, name = (part.strip() for part in job.spec.partition("::"))
            yield (location if name else None), name or location, "error", dict(
                spec=job.spec, error=_import_error(exc), points=points, visibility=visibility)
            continue
        for target in targets:
            location, _, name = target.display.partition("::")
            yield location, name, "item", dict(job=job, target=target, isolation=isolation,
                                               points=points, visibility=visibility)


def _import_error(exc: Exception) -> str:
    from ..base.errors import ShapetraceError

    return str(exc) if isinstance(exc, ShapetraceError) else \
        f"internal error while importing: {type(exc).__name__}: {exc}"


def _points(job, entry) -> float:
    """The target's ``points`` (its Gradescope max_score), from the job or its config entry."""
    for holder in (job, entry):
        points = getattr(holder, "points", None)
        if isinstance(points, (int, float)) and not isinstance(points, bool) and points >= 0:
            return points
    return 1


def names_read(job) -> list[str] | None:
    """The pytest items of a ``drive.jobs.Job``'s target, named without importing it: the class of
    a ``file.py::Name`` that exists, the classes ``declared_module_classes`` reads from a
    ``file.py``; None when only importing it can tell (then it is imported at collection, and
    its errors are found there, as for a package module)."""
    from ..base.dims import Dims

    location, sep, name = (part.strip() for part in job.spec.strip().partition("::"))
    if not location.endswith(".py") or (sep and (not name or "::" in name)):
        return None
    try:
        Dims(job.dims)  # bad sizes fail at collection, as before
    except Exception:  # noqa: BLE001
        return None
    path = Path(location).expanduser()
    path = path if path.is_absolute() else Path(job.root or Path.cwd()) / path
    if sep:
        return [name] if path.is_file() else None
    return declared_module_classes(path)


class ImportedOnFirstRun:
    """A target file imported when the first of its items runs, inside the items' isolation;
    its classes (``Target``) or the one-line reason it could not be imported."""

    def __init__(self, job, names: list[str]):
        self.job = job
        self.names = names
        self.targets: dict | None = None
        self.error: str | None = None

    def target(self, name: str):
        """(Target, None) or (None, error message)."""
        if self.targets is None and self.error is None:
            try:
                found = self.job.resolve()
            except Exception as exc:  # the file's own failure fails each of its items
                self.error = _import_error(exc)
            else:
                self.targets = {t.display.partition("::")[2]: t for t in found}
                if list(self.targets) != self.names:  # _declared would have said it could not tell
                    self.error = (f"importing it found the classes {', '.join(self.targets)}, not "
                                  f"{', '.join(self.names)} as read from the file; name each "
                                  f"class as a target (file.py::Name)")
        if self.error is not None:
            return None, self.error
        return self.targets[name], None


class _Unsure(Exception):
    """The file must be imported to tell."""


def declared_module_classes(path: Path) -> list[str] | None:
    """Names of the nn.Module classes ``path`` defines, in source order, as importing it
    would find them; None when that cannot be told for sure without importing it."""
    try:
        if path.suffix != ".py" or not path.is_file():
            return None
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    try:
        return _Reader(tree, path.parent).module_classes() or None
    except _Unsure:
        return None


class _Reader:
    def __init__(self, tree: ast.Module, directory: Path):
        self.tree = tree
        self.directory = directory
        self.imported: dict[str, set[str]] = {}  # top-level name -> dotted paths imported as it
        self.bound: dict[str, int] = {}  # top-level name -> how many times it is bound
        self.imports: dict[str, int] = {}  # ... of which by a top-level import statement
        self.classes: dict[str, ast.ClassDef] = {}

    def module_classes(self) -> list[str]:
        self._scan_everything()
        self._scan_top_level()
        status: dict[str, tuple[bool, bool, set[str]]] = {}  # name -> (module, forward, bases)
        for name, node in self.classes.items():
            status[name] = self._status(node, status)
        found = [name for name, (module, _, _) in status.items() if module]
        with_forward = {name for name in found if status[name][1]}
        ancestors = {base for name in with_forward for base in status[name][2]}
        return [name for name in found if not (name in ancestors and not status[name][1])]

    # -- what could bind a class behind the syntax tree's back --------------------------------
    def _scan_everything(self) -> None:
        top = set(id(node) for node in self.tree.body)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef) and id(node) not in top:
                raise _Unsure("a class defined below the top level")
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                raise _Unsure("global")
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                raise _Unsure("import *")
            if isinstance(node, ast.Name) and node.id in _DYNAMIC:
                raise _Unsure(node.id)
            if isinstance(node, ast.Attribute) and node.attr == "modules" \
                    and isinstance(node.value, ast.Name) and node.value.id == "sys":
                raise _Unsure("sys.modules")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "type" and len(node.args) + len(node.keywords) > 1:
                raise _Unsure("type(name, bases, namespace)")
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) \
                    else [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute) and _root_name(part) is not None \
                                and _root_name(part) not in ("self", "cls"):
                            self._attribute_assigned(part)

    def _attribute_assigned(self, node: ast.Attribute) -> None:
        root = _root_name(node)
        if root is not None and root in {c.name for c in self._top_classes()}:
            raise _Unsure("an attribute assigned on a class")

    def _top_classes(self):
        return [node for node in self.tree.body if isinstance(node, ast.ClassDef)]

    def _scan_top_level(self) -> None:
        for node in self.tree.body:
            for name in _bound_at_top(node):
                self.bound[name] = self.bound.get(name, 0) + 1
            if isinstance(node, ast.Import):
                for alias in node.names:  # import torch.nn binds torch, the package
                    name = alias.asname or alias.name.split(".")[0]
                    self._import(name, alias.name if alias.asname else name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    self._import(alias.asname or alias.name, f"{node.module}.{alias.name}")
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for name in self.classes:
            if self.bound.get(name, 0) != 1:
                raise _Unsure(f"{name} is bound more than once")

    def _import(self, name: str, dotted: str) -> None:
        self.imported.setdefault(name, set()).add(dotted)
        self.imports[name] = self.imports.get(name, 0) + 1

    # -- one class ----------------------------------------------------------------------------
    def _status(self, node: ast.ClassDef, known: dict) -> tuple[bool, bool, set[str]]:
        """(an nn.Module subclass, has a forward other than nn.Module's, local ancestors)."""
        if node.keywords or any(not self._is_dataclass(d) for d in node.decorator_list):
            raise _Unsure("a class keyword or decorator")
        own = {name for stmt in node.body for name in _bound_at_top(stmt)}
        if "__init_subclass__" in own:
            raise _Unsure("__init_subclass__")
        modules, forwards, ancestors = [], [], set()
        for base in node.bases:
            name = base.id if isinstance(base, ast.Name) else None
            if name in known and self.bound.get(name) == 1:
                is_module, has_forward, above = known[name]
                ancestors |= {name, *above}
            else:
                is_module, has_forward = self._foreign(base)
            modules.append(is_module)
            forwards.append(has_forward)
        if sum(modules) > 1 or (any(modules) and any(
                f for m, f in zip(modules, forwards) if not m)):
            raise _Unsure("which base's forward comes first")  # left to the method order
        return any(modules), "forward" in own or any(forwards), ancestors

    def _is_dataclass(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self._dotted(target) == "dataclasses.dataclass"

    def _foreign(self, base: ast.expr) -> tuple[bool, bool]:
        """(an nn.Module subclass, with its own forward) for a base imported from a known
        package or a builtin."""
        dotted = self._dotted(base)
        if dotted is None:
            raise _Unsure("a base that is not a name")
        root = dotted.split(".")[0]
        if root != "builtins" and (root not in _KNOWN_ROOTS or self._shadowed(root)):
            raise _Unsure(f"a base from {root}")
        value = _lookup(dotted)
        if not isinstance(value, type):
            raise _Unsure("a base that is not a class")
        from torch import nn

        forward = getattr(value, "forward", None)
        if not issubclass(value, nn.Module):
            return False, forward is not None
        return True, forward is not nn.Module.forward

    def _dotted(self, node: ast.expr) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        name = node.id
        if len(self.imported.get(name, ())) == 1 and self.bound[name] == self.imports[name]:
            (head,) = self.imported[name]  # every binding of it imports the same thing
        elif name not in self.bound and hasattr(builtins, name):
            head = f"builtins.{name}"
        else:
            return None
        return ".".join([head, *reversed(parts)])

    def _shadowed(self, root: str) -> bool:
        """A file or package of that name next to the target, imported instead."""
        return (self.directory / f"{root}.py").exists() or (self.directory / root).is_dir()


def _lookup(dotted: str):
    """The object a dotted path names, through modules already loaded (torch is imported here;
    the others are Python's own)."""
    parts = dotted.split(".")
    if parts[0] == "torch":
        import torch  # noqa: F401 - the targets need it anyway
    value = sys.modules.get(parts[0])
    if value is None:
        raise _Unsure(f"{parts[0]} is not loaded")
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(value, part):
            value = getattr(value, part)
        else:
            value = sys.modules.get(".".join(parts[:i + 1]))
            if value is None:
                raise _Unsure(f"no {dotted}")
    return value


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _bound_at_top(node: ast.stmt) -> list[str]:
    """Names a statement binds in the scope it runs in (not inside functions or classes it
    defines)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    names: list[str] = []
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(current.name)
            continue
        if isinstance(current, (ast.Import, ast.ImportFrom)):
            names.extend(a.asname or a.name.split(".")[0] for a in current.names)
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            names.append(current.id)
        elif isinstance(current, ast.ExceptHandler) and current.name:
            names.append(current.name)
        elif isinstance(current, (ast.MatchAs, ast.MatchStar)) and current.name:
            names.append(current.name)
        elif isinstance(current, ast.MatchMapping) and current.rest:
            names.append(current.rest)
        stack.extend(ast.iter_child_nodes(current))
    return names


@contextlib.contextmanager
def older_objects_skipped():
    """While a target runs and is reported, the cyclic garbage collector walks only the objects
    made since it started (``gc.freeze``). torch and the session hold a few hundred thousand
    objects that every full collection would walk again, a tenth of a second each time: about
    a sixth of the CPU time of grading. Undone when the item ends, so an older object that
    became garbage meanwhile is collected later as usual. A session that froze objects itself
    is left as it is."""
    import gc

    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
