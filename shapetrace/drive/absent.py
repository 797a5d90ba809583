"""A file that imports a package this machine does not have.

``from timm.models.layers import DropPath`` at the top of a file stops the whole import, and
with it every class of the file, even those that never touch the package. Such a file is
imported again with the missing package standing in (:func:`standing_in`): each name taken
from it is a :class:`NotInstalled` placeholder. Classes that never use one are checked as
usual; a class that calls one, builds on one or computes with one stops with
:class:`AbsentPackage`, a target error that names the package and the line, never a finding.

While the file's own top level runs (decorators such as ``@register_model``, a registry call),
a call of a placeholder gives another placeholder (a decorator's call hands the class or
function it decorates on unchanged) and an attribute set on one is dropped, so the import can
finish; after it, every use raises. A package imported inside ``try: ... except ImportError`` keeps the file's own
fallback: the placeholders are only put in after an import failed outright, and they are taken
out of ``sys.modules`` again once the file is imported. An installed module whose own import
refuses a placeholder (a feature probe of a package standing in) stands in
too, named by its dotted path (:func:`refusing_module`), and says which missing package it needs.
A package standing in says its ``__version__`` is :data:`STANDING_VERSION`, later than any.
A name an installed package does not have (``from transformers import top_k_top_p_filtering``,
removed in the version installed) stands in alone (:func:`lacking_name`): the file is imported
with a placeholder for that name, and a class that uses it says which version it needs.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import re
import sys
import types

from ..base.errors import TargetError
from ..base.source import display_path, is_library_file

#: import names whose package on PyPI is named otherwise
_DISTRIBUTIONS = {"cv2": "opencv-python", "PIL": "pillow", "yaml": "pyyaml",
                  "sklearn": "scikit-learn", "skimage": "scikit-image", "bs4": "beautifulsoup4",
                  "attr": "attrs", "google": "protobuf", "Levenshtein": "python-Levenshtein"}


def distribution(module: str) -> str:
    """What ``pip install`` takes for the module ``module`` (``cv2``: ``opencv-python``)."""
    top = module.split(".")[0]
    return _DISTRIBUTIONS.get(top, top.replace("_", "-"))


def missing_package(exc: BaseException, folders) -> str | None:
    """The top-level name of a package that is not installed when ``exc`` says it is missing,
    else None: never one of the user's own modules (a top-level name one of ``folders`` holds),
    nor a submodule missing from an installed package (another version). An ``ImportError`` of
    the code's own raised while a package was missing (``except ImportError: raise
    ImportError("please install torchao")``) is read as that package missing."""
    if type(exc) is ImportError and isinstance(exc.__cause__ or exc.__context__, ModuleNotFoundError):
        exc = exc.__cause__ or exc.__context__
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not name or name.startswith("."):
        return None
    top = name.split(".")[0]
    if top.startswith("_shapetrace") or any(
            (folder / f"{top}.py").exists() or (folder / top).is_dir() for folder in folders):
        return None  # the user's own module, or one of its submodules, is what is missing
    try:
        if importlib.util.find_spec(top) is not None:
            return None  # installed: a submodule of it is missing (another version)
    except (ImportError, ValueError):
        pass
    return top


class AbsentPackage(TargetError):
    """A placeholder of a package that is not installed was used."""

    def __init__(self, path: str, where: str = ""):
        if path.startswith(NATIVE):
            rest = path[len(NATIVE):].strip()
            self.package = next((lib for lib in sorted(_LIBRARIES, key=len, reverse=True)
                                 if rest.startswith(lib)), rest)
            used = rest[len(self.package) + 1:]
            super().__init__(f"it needs the native library {self.package}"
                             f"{f' (its {used})' if used else ''}, which is not built here "
                             f"(at {where or 'its file'}): build it first")
            return
        lacking = next((name for name in _LACKING if _under(path, name)), None)
        if lacking is not None:
            self.package = lacking.split(".")[0]
            super().__init__(f"it needs {lacking}, which the version of {self.package!r} installed here "
                             f"does not have ({path} at {where or 'its file'}): install the version "
                             f"the project was written for")
            return
        self.package = next((_NEEDS[m] for m in sorted(_NEEDS, key=len, reverse=True) if _under(path, m)),
                            path.split(".")[0])
        at = f" at {where}" if where else ""
        if path not in _EVER and "." not in path and "(" not in path:
            super().__init__(f"it needs a package that is not installed here{at}")
            return
        super().__init__(f"it needs the package {self.package!r}, which is not installed "
                         f"({path}{at}): pip install {distribution(self.package)}")


#: top-level names standing in now, every one that ever stood in (to name one in a message),
#: and how deep in a file's own top level the import is
_STANDING: set[str] = set()
_EVER: set[str] = set()
_IMPORTING = [0]
#: an installed module standing in (dotted) -> the missing package its import refused
_NEEDS: dict[str, str] = {}
#: what a native library that could not be loaded (``ctypes.CDLL('kernels/lib.so')``, not
#: built) stands under while a file imports (:func:`native_library`)
NATIVE = "<native library>"
_LIBRARIES: set[str] = set()
#: names installed packages lack (``transformers.top_k_top_p_filtering``), standing in alone
_LACKING: set[str] = set()
#: those of them that are modules (``torch._six``), standing in as modules
_LACKING_MODULES: set[str] = set()


def _under(name: str, module: str) -> bool:
    """Whether ``name`` is the module ``module`` or something inside it."""
    return name == module or name.startswith(module + ".")


def _caller() -> str:
    """``file.py:line`` of the user's code that used the placeholder (not torch, shapetrace or
    an installed package), or ""."""
    frame = sys._getframe(1)
    while frame is not None and is_library_file(frame.f_code.co_filename, installed_is_library=False):
        frame = frame.f_back
    if frame is None:
        return ""
    filename = frame.f_code.co_filename
    return f"{display_path(filename) or filename}:{frame.f_lineno}"


class NotInstalled:
    """What a name of a package that is not installed stands for."""

    __slots__ = ("_st_path",)

    def __init__(self, path: str):
        object.__setattr__(self, "_st_path", path)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return NotInstalled(f"{self._st_path}.{name}")

    # what code that reads functions and classes asks of one (its name, its module)
    __name__ = property(lambda self: self._st_path.rsplit(".", 1)[-1])
    __module__ = property(lambda self: self._st_path.rsplit(".", 1)[0])

    def __setattr__(self, name, value):
        if _IMPORTING[0]:  # ``REGISTRY.__doc__ = ...`` at a file's top level: nothing to keep
            return
        raise AbsentPackage(self._st_path, _caller())

    def __call__(self, *args, **kwargs):
        if _IMPORTING[0]:  # a decorator (``@REGISTRY.register()``) hands its class on
            if len(args) == 1 and not kwargs and (isinstance(args[0], type) or inspect.isfunction(args[0])):
                return args[0]
            return NotInstalled(f"{self._st_path}(...)")
        site = _caller()
        if not self._st_path.startswith(NATIVE) and _result_dropped(sys._getframe(1)) \
                and (_CONSTRUCTING[0] or not _holds_tensor((args, kwargs))):
            # ``logger.debug(f"...")``: a call made for its effect elsewhere (a log, a report),
            # handed no tensor to change and whose result nothing reads; or, while a module is
            # built, one that writes the weights it is handed (``trunc_normal_(self.pos_embed,
            # std=.02)``), which no verdict rests on: passed over. Never a native library's
            # call: it may write through a pointer it is handed (``lib.fused(x.data_ptr())``)
            SKIPPED.setdefault(site, self._st_path)
            return None
        raise AbsentPackage(self._st_path, site)

    def __mro_entries__(self, bases):
        return (_base(self._st_path, bases),)

    def __repr__(self) -> str:
        return f"<{self._st_path}: not installed>"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        used = next((a for a in (*args, *(kwargs or {}).values()) if isinstance(a, NotInstalled)), None)
        raise AbsentPackage(used._st_path if used is not None else _named(""), _caller())


#: ``file.py:line`` -> the name, of each call of a package not installed passed over (its
#: result dropped, no tensor handed to it): cleared by the caller before each class
SKIPPED: dict[str, str] = {}
_CONSTRUCTING = [False]


@contextlib.contextmanager
def constructing():
    """While inside, a module's constructor runs: a call of a package not installed whose
    result it drops is passed over even when handed a tensor (an initialisation of a weight)."""
    before, _CONSTRUCTING[0] = _CONSTRUCTING[0], True
    try:
        yield
    finally:
        _CONSTRUCTING[0] = before


def _result_dropped(frame) -> bool:
    """Whether the call ``frame`` is making is a statement of its own: the instruction after
    it drops the result (``POP_TOP``)."""
    import dis

    if frame is None:
        return False
    code, at = frame.f_code, frame.f_lasti
    key = (code, at)
    found = _DROPPED.get(key)
    if found is None:
        after = [i for i in dis.get_instructions(code) if i.offset > at and i.opname != "CACHE"]
        found = _DROPPED[key] = bool(after) and after[0].opname == "POP_TOP"
    return found


_DROPPED: dict = {}


def _holds_tensor(value, depth: int = 3) -> bool:
    import torch

    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return True
    if depth and isinstance(value, (list, tuple, set)):
        return any(_holds_tensor(v, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return any(_holds_tensor(v, depth - 1) for v in value.values())
    return False


def _refuse(self, *args, **kwargs):
    raise AbsentPackage(object.__getattribute__(self, "_st_path"), _caller())


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "matmul", "rmatmul", "truediv",
              "rtruediv", "floordiv", "rfloordiv", "mod", "pow", "rpow", "neg", "pos", "abs",
              "lt", "le", "gt", "ge", "bool", "len", "iter", "getitem", "setitem", "contains",
              "index", "int", "float", "enter", "exit"):
    setattr(NotInstalled, f"__{_name}__", _refuse)


def _base(path: str, bases: tuple) -> type:
    """A class to stand for the missing base ``path``: an ``nn.Module`` when no other base is
    one (so a module class built on it is still listed, and says what it needs), whose
    constructor raises :class:`AbsentPackage`."""
    from torch import nn

    other_module = any(isinstance(b, type) and issubclass(b, nn.Module) for b in bases)

    def __init__(self, *args, **kwargs):
        raise AbsentPackage(f"{path}, a base of {type(self).__qualname__}", _caller())

    def __getattr__(self, name):  # a constructor of its own (a dataclass's) skipped the one above
        if name in ("_parameters", "_buffers", "_modules") and "_modules" not in self.__dict__:
            raise AbsentPackage(f"{path}, a base of {type(self).__qualname__}", _caller())
        return nn.Module.__getattr__(self, name)

    def __init_subclass__(cls, **kwargs):  # class keywords of the missing base (frozen=True)
        super(stand_in, cls).__init_subclass__()

    root = object if other_module else nn.Module
    members = {"__init__": __init__, "__module__": path.rsplit(".", 1)[0],
               "__init_subclass__": classmethod(__init_subclass__)}
    if root is nn.Module:
        members["__getattr__"] = __getattr__
    stand_in = type(path.rsplit(".", 1)[-1], (root,), members)
    return stand_in


#: the version a package standing in says it is (``if float(torchvision.__version__[:3]) < 0.5``
#: at a file's top level): a version later than any, the one a user who installs it now gets
STANDING_VERSION = "99.0.0"


class _Placeholder(types.ModuleType):
    def __getattr__(self, name: str):
        if name == "__version__":
            return STANDING_VERSION
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return NotInstalled(f"{self.__name__}.{name}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds every module under a top-level name standing in, as an empty placeholder."""

    def find_spec(self, fullname, path=None, target=None):
        if not any(_under(fullname, name) for name in _STANDING):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _Placeholder(spec.name)
        module.__path__ = []
        module.__dict__.update(_removed_from_torch().get(spec.name, {}))
        return module

    def exec_module(self, module) -> None:
        return None


_FINDER = _Finder()


@functools.cache
def _removed_from_torch() -> dict[str, object]:
    """What torch removed whose value is known: ``torch._six`` (removed in 2.0, whose Python 2
    shims old vision code imports: ``from torch._six import container_abcs``) by its names, and
    ``_LinearWithBias`` (renamed ``NonDynamicallyQuantizableLinear``); standing in as they were,
    not as placeholders. Any other name of ``torch._six`` is a placeholder."""
    import collections.abc
    import math

    import torch.nn.modules.linear as linear

    return {"torch._six": {"container_abcs": collections.abc, "string_classes": (str, bytes),
                           "int_classes": int, "inf": math.inf, "nan": math.nan, "PY3": True,
                           "PY37": True},
            "torch.nn.modules.linear._LinearWithBias": linear.NonDynamicallyQuantizableLinear}


@contextlib.contextmanager
def standing_in(packages):
    """While the block runs, each of ``packages`` stands in: a module (a top-level package, or
    an installed module that refused one: ``refusing_module``, or a submodule an installed version
    lacks: ``lacking_module``) imports as a placeholder, a name an installed version lacks
    (``lacking_name``) is put on its module, and :data:`NATIVE`
    makes ``ctypes.CDLL`` give a placeholder for a library it cannot load; calls of placeholders
    give placeholders (a file's own top level is running). Afterwards all of it is taken out
    again: another file's guarded import finds the modules missing."""
    names = [name for name in packages if name in _LACKING and name not in _LACKING_MODULES]
    versions = {name for name in packages if name.startswith(UNVERSIONED)}
    modules = set(packages) - set(names) - {NATIVE} - versions
    _IMPORTING[0] += 1
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_modules_standing_in(modules))
            stack.enter_context(_names_standing_in(names))
            if versions:
                stack.enter_context(_versions_standing_in({n[len(UNVERSIONED):] for n in versions}))
            if NATIVE in packages:
                stack.enter_context(_native_standing_in())
            yield
    finally:
        _IMPORTING[0] -= 1


@contextlib.contextmanager
def _modules_standing_in(modules):
    """The modules ``modules`` (and everything under them) import as placeholders."""
    added = set(modules) - _STANDING
    _STANDING.update(added)
    _EVER.update(added)
    if _FINDER not in sys.meta_path:  # first: an installed module standing in is found too
        sys.meta_path.insert(0, _FINDER)
    try:
        yield
    finally:
        _STANDING.difference_update(added)
        if not _STANDING and _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
        for name in [n for n in sys.modules if any(_under(n, a) for a in added)]:
            if isinstance(sys.modules[name], _Placeholder):
                del sys.modules[name]
                parent, _, child = name.rpartition(".")
                if isinstance(getattr(sys.modules.get(parent), child, None), _Placeholder):
                    delattr(sys.modules[parent], child)  # ``torch.utils.tensorboard`` as imported


@contextlib.contextmanager
def _names_standing_in(names):
    """Each ``module.name`` an installed module lacks put on it as a placeholder."""
    put = []
    for name in names:
        owner, _, attr = name.rpartition(".")
        if owner in sys.modules and attr not in vars(sys.modules[owner]):
            value = _removed_from_torch().get(name) or NotInstalled(name)
            setattr(sys.modules[owner], attr, value)
            put.append((sys.modules[owner], attr, value))
    try:
        yield
    finally:
        for owner, attr, value in put:
            if vars(owner).get(attr) is value:
                delattr(owner, attr)


#: the prefix of a project's own distribution, not installed, whose version its code asks for
UNVERSIONED = "version of "


def unversioned(exc: BaseException) -> str | None:
    """``version of NAME`` when ``exc`` says the metadata of a distribution is not installed
    (``importlib.metadata.version("ibm-fms")`` in a package's ``__init__.py``, run from its
    source folder and never installed), raised in the user's own code; None otherwise."""
    import importlib.metadata

    if not isinstance(exc, importlib.metadata.PackageNotFoundError) or not exc.args:
        return None
    tb, own = exc.__traceback__, False
    while tb is not None:
        own = own or not is_library_file(tb.tb_frame.f_code.co_filename, installed_is_library=True)
        tb = tb.tb_next
    return f"{UNVERSIONED}{exc.args[0]}" if own and isinstance(exc.args[0], str) else None


@contextlib.contextmanager
def _versions_standing_in(names):
    """``importlib.metadata.version(name)`` gives :data:`STANDING_VERSION` for each of
    ``names`` not installed, while the block runs."""
    import importlib.metadata

    original = importlib.metadata.version

    def version(name):
        try:
            return original(name)
        except importlib.metadata.PackageNotFoundError:
            if name in names:
                return STANDING_VERSION
            raise

    importlib.metadata.version = version
    try:
        yield
    finally:
        importlib.metadata.version = original


def refusing_module(exc: BaseException, standing) -> str | None:
    """The installed module (dotted) whose own import raised ``exc``, an ``ImportError`` that
    is not a missing module, while the packages ``standing`` stood in: it refused a placeholder
    (a version check, a feature probe), so it stands in too. None otherwise."""
    if not standing or not isinstance(exc, ImportError) or isinstance(exc, ModuleNotFoundError):
        return None
    name, tb = None, exc.__traceback__
    while tb is not None:  # the innermost module body of an installed library
        frame = tb.tb_frame
        if frame.f_code.co_name == "<module>" and is_library_file(frame.f_code.co_filename,
                                                                  installed_is_library=True) \
                and not frame.f_code.co_filename.startswith("<"):
            name = frame.f_globals.get("__name__")
        tb = tb.tb_next
    if not name or name.split(".")[0] in ("shapetrace", *standing) or any(_under(name, s) for s in standing):
        return None
    _NEEDS[name] = standing[-1].split(".")[0]
    return name


@contextlib.contextmanager
def _native_standing_in():
    """``ctypes.CDLL`` giving a placeholder for a library that cannot be loaded."""
    import ctypes

    real = ctypes.CDLL

    class _Loading(real):
        def __new__(cls, name, *args, **kwargs):
            try:
                return real(name, *args, **kwargs)
            except OSError:
                _LIBRARIES.add(str(name))
                return NotInstalled(f"{NATIVE} {name}")

    ctypes.CDLL = _Loading
    try:
        yield
    finally:
        ctypes.CDLL = real


def native_library(exc: BaseException) -> str | None:
    """:data:`NATIVE` when ``exc`` is a native library ``ctypes`` could not load while a file
    imported (a kernel the project builds, not built): it stands in, and a class that calls
    it says so. None otherwise."""
    tb = exc.__traceback__ if isinstance(exc, OSError) else None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "__init__" and tb.tb_frame.f_code.co_filename.replace("\\", "/") \
                .endswith("ctypes/__init__.py"):
            return NATIVE
        tb = tb.tb_next
    return None


_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")


def lacking_name(exc: BaseException) -> str | None:
    """``module.name`` when ``exc`` says an installed package has no such name (``cannot import
    name 'x' from 'transformers'``: another version), not one of the user's own modules; None
    otherwise."""
    found = _CANNOT_IMPORT.search(str(exc)) if isinstance(exc, ImportError) else None
    if found is None:
        return None
    owner = sys.modules.get(found.group(2))
    filename = getattr(owner, "__file__", None) or ""
    name = f"{found.group(2)}.{found.group(1)}"
    if owner is None or not is_library_file(filename, installed_is_library=True) \
            or found.group(2).split(".")[0] in ("torch", "shapetrace") and name not in _removed_from_torch():
        return None
    _LACKING.add(name)
    return name


def lacking_module(exc: BaseException) -> str | None:
    """The dotted module when ``exc`` says an installed package has no such submodule in the
    version installed (``from torch._six import inf``: removed since), which then stands in as
    a module and is named like a lacking name; None otherwise."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    parent = name.rpartition(".")[0] if name else ""
    owner = sys.modules.get(parent) if parent else None
    filename = getattr(owner, "__file__", None) or ""
    if owner is None or not is_library_file(filename, installed_is_library=True) \
            or parent.split(".")[0] == "shapetrace":
        return None
    _LACKING.add(name)
    _LACKING_MODULES.add(name)
    return name


def absent_in(exc: BaseException) -> AbsentPackage | None:
    """The target error when ``exc`` came from a placeholder: raised by one, or a library's
    complaint about being handed one (``must be Tensor, not NotInstalled``)."""
    seen, first = 0, exc
    while exc is not None and seen < 8:
        if isinstance(exc, AbsentPackage):
            return exc
        if NotInstalled.__name__ in str(exc):
            return AbsentPackage(_named(str(exc)))
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return _other_version(first) if _LACKING else None


class OtherVersion(AbsentPackage):
    """The code failed inside an installed package its file was written for another version of."""

    def __init__(self, lacking: str, exc: BaseException, where: str):
        TargetError.__init__(self, (
            f"its file was written for another version of {lacking.split('.')[0]!r} (the one "
            f"installed here has no {lacking.rpartition('.')[2]}), and it raised "
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''} "
            f"inside that package ({where}): install the version the project was written for"))
        self.package = lacking.split(".")[0]


def _other_version(exc: BaseException) -> OtherVersion | None:
    """:class:`OtherVersion` when ``exc`` was raised inside an installed package that a file of
    the calls leading there lacked a name of (``lacking_name``): it was written for another
    version, and this failure is the version's, not the code's."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    if not frames:
        return None
    package = str(frames[-1].f_globals.get("__name__", "")).split(".")[0]
    lacking = {name for name in _LACKING if name.split(".")[0] == package}
    if not lacking:
        return None
    for frame in frames:
        found = next((value._st_path for value in list(frame.f_globals.values())
                      if isinstance(value, NotInstalled) and value._st_path in lacking), None)
        if found is not None:
            inner = frames[-1]
            where = f"{display_path(inner.f_code.co_filename) or inner.f_code.co_filename}:{inner.f_lineno}"
            return OtherVersion(found, exc, where)
    return None


def _named(text: str) -> str:
    """The package a library's message about a placeholder means: one it names, else the one
    standing in (when only one ever did)."""
    for name in sorted(_EVER, key=len, reverse=True):
        if name in text:
            return name
    return next(iter(_EVER)) if len(_EVER) == 1 else ""


__all__ = ["AbsentPackage", "NotInstalled", "absent_in", "distribution", "lacking_name", "native_library", "refusing_module", "standing_in"]
