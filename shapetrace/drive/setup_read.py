"""Modules set up by a call of their own before their forward.

Some modules are made to be called in two steps: ``attn.init_keys(encoder_states)`` projects
the keys once, then each ``attn(query)`` reads ``self.proj_keys``; a decoder's
``init_hidden(states)`` sets what its forward reads. Called alone, such a forward fails on an
attribute no constructor sets. When that happens, the method of the module that sets the
attribute (or a method of the target that calls it on the submodule) is called first, with
inputs guessed from its own parameters as forward's are (``keys`` a sequence of its own, ``x``
the data), on every forward shapetrace makes, the behaviour checks' included; the note names
the call. The reading stands only if the forward then runs.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..analysis.code import definition
from .guess import Guess

#: what Python says of an attribute an object does not have
NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
#: the most set-up calls one plan makes (each call may set what the next failure needs)
_MOST = 3


def sets_attribute(cls: type, name: str, method: str = "__init__") -> bool:
    """Whether ``cls``'s own constructor (or its ``method``) assigns ``self.<name>`` (so a
    missing one was set on a path not taken); ``name`` may name an entry of a dict the module
    keeps (``samples['weight']``)."""
    body = _body(cls, method)
    return body is not None and any(
        isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store)
        and ast.unparse(node) == f"self.{name}" for node in ast.walk(body))


def setter_of(owner: type, name: str) -> str | None:
    """The method of ``owner`` (not its constructor) that sets ``self.<name>``, when its
    constructor does not; else None."""
    if sets_attribute(owner, name):
        return None
    return next((method for klass in owner.__mro__ for method, func in vars(klass).items()
                 if method not in ("__init__", "forward") and inspect.isfunction(func)
                 and sets_attribute(klass, name, method)), None)


def unset_entry(raised: BaseException, raised_at, model) -> tuple[type, str, str] | None:
    """``(class, "self.samples['weight']", method)`` when ``raised`` is a ``KeyError`` of a dict
    the module keeps (``self.samples['weight']`` read at ``raised_at``, a line of a class of one
    of ``model``'s modules) whose entry only another method of its class fills
    (``set_sample_config()``, :func:`setter_of`): a module set up by that call first."""
    import linecache

    if not isinstance(raised, KeyError) or not raised.args or not isinstance(raised.args[0], str) \
            or raised_at is None or not isinstance(model, torch.nn.Module):
        return None
    read = re.search(rf"self\.(\w+)\[\s*['\"]{re.escape(raised.args[0])}['\"]\s*\]",
                     linecache.getline(*raised_at))
    entry = f"{read.group(1)}[{raised.args[0]!r}]" if read is not None else None
    for owner in dict.fromkeys(type(m) for m in model.modules()) if entry else ():
        if _holds_line(owner, raised_at) and (method := setter_of(owner, entry)) is not None:
            return owner, f"self.{entry}", method
    return None


def _holds_line(cls: type, at) -> bool:
    """Whether the source of ``cls`` (or of a class it inherits from) holds the line ``at``."""
    import os

    for klass in cls.__mro__[:-1]:
        try:
            lines, start = inspect.getsourcelines(klass)
            file = inspect.getsourcefile(klass)
        except (OSError, TypeError):
            continue
        if file and os.path.realpath(file) == os.path.realpath(at[0]) and start <= at[1] < start + len(lines):
            return True
    return False


def _body(cls: type, method: str):
    """The definition of ``cls``'s own constructor, or of its ``method``, or None."""
    from ..analysis.code import own_init

    func = own_init(cls) if method == "__init__" else vars(cls).get(method)
    return definition(func) if func is not None else None


@dataclass(frozen=True)
class SetUpCall(Guess):
    """No set-up call yet: each reading adds one (a module path and a method)."""

    def read_by(self, failed, plan) -> bool:
        return self._call(failed, plan) is not None

    def others(self, plan, failed) -> Iterator:
        from .infer import infer_inputs

        path, method = self._call(failed, plan)
        module = failed.model.get_submodule(path)
        try:
            specs = tuple(infer_inputs(getattr(module, method), plan.dims))
        except Exception:  # noqa: BLE001 - read beside forward's inputs, or no reading
            specs = _beside_forward(getattr(module, method), module, plan.dims)
        if specs is None:
            return
        shown = ", ".join(str(s) for s in specs)
        owner = type(module).__qualname__
        note = (f"{owner}.{method}({shown}) called before each forward: the forward reads what only "
                f"that call sets ({failed.raised}); give the set-up instance from Python "
                f"(shapetrace.check(model, inputs=...)) to choose")
        # the plan's other guesses stay open: a mask guessed over the queries' length may be
        # over the keys' that the set-up gave
        others = tuple(g for g in plan.guesses if g is not self or len(plan.setup) + 1 < _MOST)
        yield dataclasses.replace(plan, setup=plan.setup + ((path, method, specs),), guesses=others,
                                  note="; ".join(filter(None, (plan.note, note))), reading_of=self)

    @staticmethod
    def _call(failed, plan) -> tuple[str, str] | None:
        """(module path, method) to call first: the target's own method that sets the missing
        attribute, or that calls the submodule's method that does."""
        raised, model = failed.raised, failed.model
        found = NO_ATTRIBUTE.search(str(raised)) if isinstance(raised, AttributeError) else None
        if found is None or model is None or not isinstance(plan.request.module, type):
            return None  # an instance given (or captured from its own code) is set up as it is
        done = {(p, m) for p, m, _ in plan.setup}
        for path, module in model.named_modules():
            if type(module).__name__ != found.group(1):
                continue
            method = setter_of(type(module), found.group(2))
            if method is None:
                continue
            if path:  # a method of the target that makes that call on the submodule
                caller = next((name for name, func in vars(type(model)).items()
                               if name not in ("__init__", "forward") and inspect.isfunction(func)
                               and _calls(type(model), name, method)), None)
                path, method = ("", caller) if caller is not None else (path, method)
            return None if (path, method) in done else (path, method)
        return None


def _beside_forward(func, module, dims) -> tuple | None:
    """The set-up's inputs read from their names beside forward's (``init_keys(self, keys)`` of
    a module whose forward takes a ``query``: the keys, (B, S, C)); a size by its name
    (``max_batch_size``: B); any other tensor the sequence the set-up prepares, (B, S, C)."""
    from ..base.names import is_switch, size_of
    from ..base.specs import InputSpec, ValueInput
    from .input_reads import spec_from_name

    try:
        params = [p for p in inspect.signature(func).parameters.values()
                  if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        beside = set(inspect.signature(module.forward).parameters) | {p.name for p in params}
    except (TypeError, ValueError):
        return None
    specs = []
    for p in params:
        if is_switch(p.name):
            return None
        dim = size_of(p.name, constructor=True)
        specs.append(ValueInput(p.name, dims[dim]) if dim in dims else
                     spec_from_name(p.name, beside) or InputSpec(p.name, ("B", "S", "C")))
    return tuple(specs) if specs else None


def _calls(cls: type, method: str, called: str) -> bool:
    """Whether ``cls.method`` calls a method named ``called`` of something it holds."""
    body = _body(cls, method)
    return body is not None and any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == called
        for node in ast.walk(body))


class SetUpFirst:
    """``forward`` that first makes the plan's set-up calls with their inputs (cast to the
    module's floating dtype: the behaviour checks run a float64 copy). It holds its module, so
    that a deep copy of the module calls the copy."""

    def __init__(self, module, forward, calls: tuple):
        self.module, self.calls = module, calls
        # the class's function (called on the module held: a copy's), or a wrapper of forward
        # that holds its module itself (``attempt._ByKeyword``)
        self.func = getattr(forward, "__func__", None)
        self.inner = forward if self.func is None else None
        self.__signature__ = inspect.signature(forward)

    def __call__(self, *args, **kwargs):
        import torch

        dtype = next((p.dtype for p in self.module.parameters() if p.is_floating_point()), None)
        for path, method, values in self.calls:
            values = [v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point()
                      and dtype is not None else v for v in values]
            getattr(self.module.get_submodule(path), method)(*values)
        if self.func is None:
            return self.inner(*args, **kwargs)
        return self.func(self.module, *args, **kwargs)


__all__ = ["NO_ATTRIBUTE", "SetUpCall", "SetUpFirst", "sets_attribute", "setter_of"]
