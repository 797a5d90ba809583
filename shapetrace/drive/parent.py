"""A module checked in its parent's context: built by the module that builds it, fed what that
module's forward hands it.

A class whose constructor or forward arguments nothing names (``layer_id``, ``freqs_cis``,
``multiple_of``) is often built and called by another class of the same file (an attention by
its block, a block by its model): the parent's code says what the arguments are. When the class
alone cannot be built or fed, :func:`in_parent` finds a class of its module that builds it (its
constructor calls it, directly or through other classes of the module), builds that parent at
the probe sizes, runs its forward until the first call of an instance of the class, and hands
back that instance and the arguments it was called with. The check then runs on them, as on an
instance given with its inputs. A parent whose own forward fails on the shapes of the inputs
made for it (a guess that does not fit it) is not used: what it hands on was made from that
guess.
"""

from __future__ import annotations

import ast
import inspect
import os
import time
from dataclasses import dataclass, replace

import torch

from ..base.errors import ShapetraceError
from ..base.source import class_file, class_namespace
from ..base.specs import ValueInput
from .examples import package_base
from .usage import _function_def, _init_of, _resolve, _tree


@dataclass
class InParent:
    """The instance ``module`` built by ``parent`` and the inputs it was first called with."""

    module: torch.nn.Module
    inputs: list
    parent: str
    dims: object = None  # the probe sizes the parent was built at


class _Called(Exception):
    """Raised by the hook once the first call is caught: the parent's forward stops there."""


def in_parent(request, *, failed: bool = False) -> InParent | None:
    """``request``'s class built and called by a parent class of its module (see the module's
    docstring), or None when no parent of the module builds, runs and calls it. ``failed``:
    the class alone did not run, so a parent that hands on its own guessed mask beside a tensor
    it made (a table of positions) is used too."""
    from ..base.dims import Dims
    from .asked import EVEN_HEAD_SIZE

    cls = request.cls
    parents = _parents(cls)
    if not parents:
        return None
    given = {k: request.dims[k] for k in request.dims.explicit}
    tries = [request.dims]
    if "d" not in given and "C" not in given and request.dims["d"] % 2:
        tries.append(Dims({**given, "d": EVEN_HEAD_SIZE}))  # rotary pairs, sinusoidal tables
    # where the class alone can be checked, a parent only refines its inputs: not for longer
    # than this (a parent whose constructor fills a table of 6000 rows in Python, built for
    # each reading, would cost minutes)
    stop_at = None if failed else time.monotonic() + _OPTIONAL_SECONDS
    for dims in tries:
        for parent in parents:
            if stop_at is not None and time.monotonic() > stop_at:
                return None
            found = _caught(replace(request, dims=dims), parent, cls, failed, stop_at)
            if found is not None:
                found.dims = dims
                return found
    return None


#: how long parents are tried for a class that could be checked alone
_OPTIONAL_SECONDS = 15.0


def _parents(cls: type) -> list[type]:
    """The classes whose constructors build ``cls``, directly or through other classes: those
    of its module, then those of the other modules of its package, nearest first."""
    names = class_namespace(cls)
    classes = [v for v in names.values() if isinstance(v, type) and not _same(v, cls)
               and issubclass(v, torch.nn.Module) and v.__module__ == cls.__module__]
    classes += [c for c in _package_classes(cls, [c.__name__ for c in classes])
                if not any(_same(c, k) for k in classes)]
    found, frontier = [], [cls]
    while frontier:
        wanted = frontier.pop(0)
        for c in classes:
            if not any(_same(c, f) for f in found) and _builds(c, wanted):
                found.append(c)
                frontier.append(c)
    return found


def _same(a: type, b: type) -> bool:
    """The same class, also when its file was loaded twice (as the target, and as a module of
    its package a parent imports)."""
    return a is b or (a.__qualname__ == b.__qualname__ and _file(a) is not None
                      and _file(a) == _file(b))


def _file(cls: type) -> str | None:
    path = class_file(cls)
    return os.path.realpath(path) if path else None


def _builds(parent: type, wanted: type) -> bool:
    """Whether the constructor of ``parent`` names ``wanted`` (a call, or a class chosen
    first: ``(A if flag else B)(...)``)."""
    init = _init_of(parent)
    body = _function_def(_tree(init), "__init__") if init is not None else None
    if body is None:
        return False
    names = init.__globals__
    for node in ast.walk(body):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) \
                and getattr(node, "id", getattr(node, "attr", None)) == wanted.__name__:
            found = _resolve(node, names)
            if isinstance(found, type) and _same(found, wanted):
                return True
    return False


#: how many files of a package are read to find a parent
_PACKAGE_FILES = 200


def _package_classes(cls: type, siblings: list[str]) -> list[type]:
    """Module classes of the other modules of ``cls``'s package (the folders above its file
    that hold an ``__init__.py``) whose source names ``cls`` or one of its ``siblings`` (the
    module classes of its own file), and of the modules that name those, imported as the
    package imports them."""
    import importlib
    import re
    import sys

    path = _file(cls)
    if path is None:
        return []
    folder = os.path.dirname(path)
    base = package_base(folder)
    if base == folder:
        return []  # a file outside any package
    root = os.path.join(base, os.path.relpath(folder, base).split(os.sep)[0])
    texts = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        for name in files:
            if name.endswith(".py") and len(texts) < _PACKAGE_FILES:
                file = os.path.realpath(os.path.join(directory, name))
                if file != path:
                    try:
                        with open(file, encoding="utf-8") as handle:
                            texts[file] = handle.read()
                    except (OSError, UnicodeDecodeError):
                        pass
    out: list[type] = []
    wanted, done = [cls.__name__, *siblings], set()  # the classes of its file build it too
    while wanted:
        name = wanted.pop(0)
        if name in done:
            continue
        done.add(name)
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        for file, text in texts.items():
            if not pattern.search(text) or "class " not in text:
                continue
            dotted = os.path.relpath(file, base)[:-3].replace(os.sep, ".")
            if dotted.endswith(".__init__"):
                dotted = dotted[: -len(".__init__")]
            added = base not in sys.path
            if added:
                sys.path.insert(0, base)
            try:
                module = importlib.import_module(dotted)
            except Exception:  # noqa: BLE001 - a module of the package that cannot be imported
                continue
            finally:
                if added and base in sys.path:
                    sys.path.remove(base)
            for value in vars(module).values():
                if isinstance(value, type) and issubclass(value, torch.nn.Module) \
                        and value.__module__ == module.__name__ \
                        and not any(_same(value, k) for k in out):
                    out.append(value)
                    wanted.append(value.__name__)
    return out


def _caught(request, parent: type, cls: type, failed: bool = False, stop_at=None) -> InParent | None:
    from .plan import Request, make_plan

    try:
        plan = make_plan(Request(module=parent, dims=request.dims, display=request.display,
                                 seed=request.seed))
    except (ShapetraceError, Exception):  # noqa: BLE001 - a parent that cannot be built
        return None
    if plan.problem is not None:
        return None
    from .plan import VectorInputs

    plans = [plan] + [replace(plan, inputs=g.tokens) for g in plan.guesses
                      if isinstance(g, VectorInputs)]  # inputs read as token ids too
    for each in plans:
        if stop_at is not None and time.monotonic() > stop_at:
            return None
        found = _caught_in(each, cls, parent, failed)
        if found is not None:
            return found
    read = _read_again(plan, stop_at)  # a parent whose guessed inputs did not fit: as its check reads them
    return _caught_in(read, cls, parent, failed) if read is not None else None


#: how many readings of a parent's guesses are run to find one its forward runs on
_PARENT_READINGS = 8


def _read_again(plan, stop_at=None):
    """The first reading of ``plan``'s guesses (an input read as an image, its channels last,
    at another side) on which the parent's forward runs, as a check of the parent would read
    them; None when its first plan runs or no reading does."""
    from .attempt import attempt

    try:
        first = attempt(plan, watch=False)
    except (ShapetraceError, Exception):  # noqa: BLE001 - a parent that cannot be built
        return None
    if first.ran:
        return None
    budget = [_PARENT_READINGS]

    def runs(failed, depth):
        for other in failed.plan.readings(failed):
            if budget[0] <= 0 or (stop_at is not None and time.monotonic() > stop_at):
                return None
            budget[0] -= 1
            try:
                again = attempt(other, watch=False)
            except (ShapetraceError, Exception):  # noqa: BLE001 - a reading it refuses
                continue
            if again.ran and other.accepts(again):
                return other
            if depth > 1 and other.guesses and not again.ran:
                deeper = runs(again, depth - 1)
                if deeper is not None:
                    return deeper
        return None

    return runs(first, 2)


def _caught_in(plan, cls: type, parent: type, failed: bool = False) -> InParent | None:
    from .attempt import build

    try:
        model, args, _, _ = build(plan)
    except (ShapetraceError, Exception):  # noqa: BLE001 - a parent that cannot be built
        return None
    guessed_masks = [a for a, spec in zip(args, plan.inputs) if getattr(spec, "mask", None)]
    try:  # the parent runs whole on what was made for it first: a parent whose forward fails
        with torch.no_grad():  # on its shapes (an image guessed as vectors) hands on values
            model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])  # made so
    except Exception as exc:  # noqa: BLE001 - a failure of another kind says nothing of them
        if _misfit(exc):
            return None
    caught: list = []

    def hook(module, args, kwargs):
        if not caught:
            caught.append((module, args, kwargs))
        raise _Called

    handles = [m.register_forward_pre_hook(hook, with_kwargs=True)
               for m in model.modules() if _same(type(m), cls)]
    if not handles:
        return None
    try:
        with torch.no_grad():
            model(*args)
    except _Called:
        pass
    except Exception:  # noqa: BLE001 - the parent failed before calling it
        return None
    finally:
        for h in handles:
            h.remove()
    if not caught:
        return None
    given = args  # what the parent was fed
    module, args, kwargs = caught[0]
    handed = [*args, *kwargs.values()]
    made = failed and any(isinstance(a, torch.Tensor) and not any(a is g for g in given)
                          for a in handed)
    if not made and any(a is m for a in handed for m in guessed_masks):
        return None  # it hands on a mask guessed for it and nothing it made: one that makes
        # the mask is sought (a mask beside a table the parent made, ``pos``, is handed on)
    inputs = _as_inputs(module, args, kwargs)
    if inputs is None:
        return None
    try:  # it must run on what its parent passes, at these sizes (on copies: a forward that
        with torch.no_grad():  # writes into its inputs, ``K.transpose_(2, 3)``, leaves them as caught)
            module(*[i.value.clone() if isinstance(i.value, torch.Tensor) else i.value for i in inputs])
    except Exception:  # noqa: BLE001 - at other sizes, perhaps
        return None
    return InParent(module, inputs, parent.__qualname__)


def _misfit(exc: BaseException) -> bool:
    """Whether a failure can come from the shapes a forward was given: a shape or size error
    (``RuntimeError``, ``IndexError``, ``ValueError``) or a check refusing them (``assert``);
    not a value left None, a missing attribute or a name (``TypeError``, ``AttributeError``),
    nor code left unwritten (``NotImplementedError``)."""
    return isinstance(exc, (RuntimeError, IndexError, ValueError, AssertionError)) \
        and not isinstance(exc, NotImplementedError)


def _as_inputs(module, args, kwargs) -> list | None:
    """The call's arguments in forward's order, each a named input (tensors and values alike),
    or None when the call cannot be made positionally."""
    try:
        bound = inspect.signature(module.forward).bind(*args, **kwargs)
    except TypeError:
        return None
    out = []
    for name, value in bound.arguments.items():
        param = inspect.signature(module.forward).parameters[name]
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            return None
        if isinstance(value, torch.Tensor):
            value = value.detach().clone()
        out.append(ValueInput(name, value))
    return out


def request_in(request, found: InParent):
    """``request`` for the instance its parent built, with the inputs its parent passed."""
    return replace(request, module=found.module, init=None, inputs=found.inputs,
                   dims=found.dims or request.dims)
