"""A module checked in its parent's context: built by the module that builds it, fed what that
module's forward hands it.

A class whose constructor or forward arguments nothing names (``layer_id``, ``freqs_cis``,
``multiple_of``) is often built and called by another class of the same file (an attention by
its block, a block by its model): the parent's code says what the arguments are. When the class
alone cannot be built or fed, :func:`in_parent` finds a class of its module that builds it (its
constructor calls it, directly or through other classes of the module), builds that parent at
the probe sizes, runs its forward until the first call of an instance of the class, and hands
back that instance and the arguments it was called with. The check then runs on them, as on an
instance given with its inputs.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, replace

import torch

from ..base.errors import ShapetraceError
from ..base.source import class_namespace
from ..base.specs import ValueInput
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


def in_parent(request) -> InParent | None:
    """``request``'s class built and called by a parent class of its module (see the module's
    docstring), or None when no parent of the module builds, runs and calls it."""
    from ..base.dims import Dims
    from .plan import EVEN_HEAD_SIZE

    cls = request.cls
    parents = _parents(cls)
    if not parents:
        return None
    given = {k: request.dims[k] for k in request.dims.explicit}
    tries = [request.dims]
    if "d" not in given and "C" not in given and request.dims["d"] % 2:
        tries.append(Dims({**given, "d": EVEN_HEAD_SIZE}))  # rotary pairs, sinusoidal tables
    for dims in tries:
        for parent in parents:
            found = _caught(replace(request, dims=dims), parent, cls)
            if found is not None:
                found.dims = dims
                return found
    return None


def _parents(cls: type) -> list[type]:
    """The classes of ``cls``'s module whose constructors build ``cls``, directly or through
    other classes of the module, nearest first."""
    names = class_namespace(cls)
    classes = [v for v in names.values() if isinstance(v, type) and v is not cls
               and issubclass(v, torch.nn.Module) and v.__module__ == cls.__module__]
    builds = {c: _built_by(c, classes + [cls]) for c in classes}
    found, frontier = [], [cls]
    while frontier:
        wanted = frontier.pop(0)
        for c in classes:
            if c not in found and wanted in builds[c]:
                found.append(c)
                frontier.append(c)
    return found


def _built_by(cls: type, candidates: list[type]) -> set[type]:
    """Which of ``candidates`` the constructor of ``cls`` calls."""
    init = _init_of(cls)
    body = _function_def(_tree(init), "__init__") if init is not None else None
    if body is None:
        return set()
    names = init.__globals__
    out = set()
    for node in ast.walk(body):  # a call, or a class chosen first: (A if flag else B)(...)
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            found = _resolve(node, names)
            if isinstance(found, type) and found in candidates:
                out.add(found)
    return out


def _caught(request, parent: type, cls: type) -> InParent | None:
    from .attempt import build
    from .plan import Request, make_plan

    try:
        plan = make_plan(Request(module=parent, dims=request.dims, display=request.display,
                                 seed=request.seed))
        if plan.problem is not None:
            return None
        model, args, _, _ = build(plan)
    except (ShapetraceError, Exception):  # noqa: BLE001 - a parent that cannot be built
        return None
    caught: list = []

    def hook(module, args, kwargs):
        if not caught:
            caught.append((module, args, kwargs))
        raise _Called

    handles = [m.register_forward_pre_hook(hook, with_kwargs=True)
               for m in model.modules() if type(m) is cls]
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
    module, args, kwargs = caught[0]
    inputs = _as_inputs(module, args, kwargs)
    if inputs is None:
        return None
    try:  # it must run on what its parent passes, at these sizes
        with torch.no_grad():
            module(*[i.value for i in inputs])
    except Exception:  # noqa: BLE001 - at other sizes, perhaps
        return None
    return InParent(module, inputs, parent.__qualname__)


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
