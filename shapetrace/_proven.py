"""Sizes the user's code proves while it runs at its own sizes (SPEC section 2).

At the user's sizes nobody chose primes, so a size names an axis only when something states
what it is:

- the model's attributes and config (``n_embd`` -> C, ``n_head`` -> H: ``_spec.proven_dims``);
- the jaxtyping annotations of the forwards that ran: ``x: Float[Tensor, "B T C"]`` binds B, T
  and C to the sizes of the ``x`` each call received (``batch``/``seq``/... read as B/T/...);
- declared inputs of the traced model's forward, as ``--input`` declares them:
  ``trace(model, inputs=["x=B,T,C"])`` binds B, T and C to the sizes of the ``x`` it was called
  with.

A name two sources (or two calls) give different sizes proves nothing and is left out: a
generation loop that grows T leaves T a number, an annotation that calls the MLP width C in one
module and the model width C in another leaves C a number. ``SizeWitness`` watches the forward
calls of one trace; it records sizes only, never tensors.
"""

from __future__ import annotations

import inspect
import re
import threading
import weakref
from collections.abc import Iterable, Mapping

from ._errors import UsageError

#: shapetrace's own names, kept as written; other annotation names go through the aliases
_CANONICAL = frozenset(("B", "T", "S", "H", "d", "C", "V", "L"))
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def annotation_name(token: str) -> str | None:
    """The dim name a jaxtyping token binds, or None when it binds no single size.

    ``"B"`` -> B, ``"batch"`` -> B, ``"C={self.n_embd}"`` -> C, ``"#T"`` -> T (broadcastable);
    ``"3*C"``, ``"*batch"``, ``"..."``, ``"_"``, ``"?T"`` (a size that may vary) and numbers
    -> None.
    """
    from ._spec import _DIM_ALIASES

    if token.startswith(("*", "?", "_")) or token == "...":
        return None
    name = token.split("=", 1)[0] if "=" in token else token
    name = name.lstrip("#").rstrip("#")
    if not _IDENTIFIER.match(name):
        return None  # 3*C, T-1, a fixed size
    if name in _CANONICAL:
        return name
    return _DIM_ALIASES.get(name.lower(), name)


def bind_tokens(tokens: list[str], shape: tuple[int, ...]) -> dict[str, int] | None:
    """The sizes ``shape`` gives the names in ``tokens`` (one variadic token may stand for any
    number of axes); None when the shape does not fit the annotation at all."""
    variadic = [i for i, t in enumerate(tokens) if t.startswith("*") or t == "..."]
    if len(variadic) > 1:
        return None
    if variadic:
        cut = variadic[0]
        after = len(tokens) - cut - 1
        if len(shape) < len(tokens) - 1:
            return None
        pairs = list(zip(tokens[:cut], shape[:cut]))
        pairs += list(zip(tokens[cut + 1:], shape[len(shape) - after:])) if after else []
    elif len(tokens) != len(shape):
        return None
    else:
        pairs = list(zip(tokens, shape))
    out: dict[str, int] = {}
    for token, size in pairs:
        name = annotation_name(token)
        if name is None or size <= 1:  # a broadcast axis of 1 says nothing about the name
            continue
        if out.setdefault(name, size) != size:
            return None  # the annotation is violated: annotation-mismatch says so, not names
    return out


class SizeWitness:
    """Watches the forward calls inside one trace (the thread that entered only) and keeps
    the sizes their annotations, and the traced model's declared inputs, bind."""

    def __init__(self, model=None, inputs: Iterable | None = None):
        self.model = model
        self.specs = _specs(inputs)
        if self.specs and model is None:
            raise UsageError("trace(inputs=...) declares the inputs of a model's forward: "
                             "pass the model too, trace(model, inputs=[...])")
        self.seen: dict[str, set[int]] = {}
        self._forwards: dict[type, tuple | None] = {}  # a module class -> its annotated params
        self._handles: list = []
        self._owner: int | None = None

    # --- entering and leaving ------------------------------------------------------------------

    def __enter__(self) -> "SizeWitness":
        from torch.nn.modules import module as nn_module

        self._owner = threading.get_ident()
        self._handles.append(nn_module.register_module_forward_pre_hook(self._annotated))
        if self.specs:
            self._handles.append(self.model.register_forward_pre_hook(self._declared,
                                                                      with_kwargs=True))
        return self

    def __exit__(self, *exc_info) -> bool:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._forwards.clear()
        return False

    # --- what was proven -----------------------------------------------------------------------

    def proven(self, attributes: Mapping[str, int] | None = None) -> dict[str, int]:
        """The names with exactly one size across every call and ``attributes`` (the model's
        own ``n_embd``/``n_head``/...)."""
        seen = {name: set(sizes) for name, sizes in self.seen.items()}
        for name, size in (attributes or {}).items():
            seen.setdefault(name, set()).add(size)
        return {name: next(iter(sizes)) for name, sizes in seen.items() if len(sizes) == 1}

    def _add(self, bound: Mapping[str, int]) -> None:
        for name, size in bound.items():
            self.seen.setdefault(name, set()).add(size)

    # --- hooks ---------------------------------------------------------------------------------

    def _annotated(self, module, args) -> None:
        if threading.get_ident() != self._owner:
            return
        cls = type(module)
        params = self._forwards.get(cls, False)
        if params is False:
            params = self._forwards[cls] = _class_params(cls, module)
        if not params:
            return
        bound: dict[str, int] = {}
        for position, tokens in params:
            if position >= len(args):
                break  # passed by keyword or left to its default: nothing seen
            shape = getattr(args[position], "shape", None)
            if shape is None:
                continue
            found = bind_tokens(tokens, tuple(shape))
            if found is None:
                return  # a violated annotation proves nothing
            for name, size in found.items():
                if bound.setdefault(name, size) != size:
                    return
        self._add(bound)

    def _declared(self, module, args, kwargs) -> None:
        if threading.get_ident() != self._owner:
            return
        bound: dict[str, int] = {}
        for position, spec in enumerate(self.specs):
            value = args[position] if position < len(args) else kwargs.get(spec.name)
            shape = getattr(value, "shape", None)
            if shape is None:
                continue
            tokens = [d if isinstance(d, str) else str(d) for d in spec.dims]
            found = bind_tokens(tokens, tuple(shape))
            if found is None:
                return  # the declaration does not fit what the model got: it proves nothing
            for name, size in found.items():
                if bound.setdefault(name, size) != size:
                    return
        self._add(bound)


def _specs(inputs) -> list:
    from ._spec import InputSpec, parse_input

    out = []
    for item in inputs or ():
        if isinstance(item, InputSpec):
            out.append(item)
        elif isinstance(item, str):
            text = item if "=" in item.split(":")[0] else f"input{len(out)}={item}"
            out.append(parse_input(text))
        else:
            raise UsageError(f"trace(inputs=...) takes specs such as 'x=B,T,C', got "
                             f"{type(item).__name__}")
    return out


#: a module class -> (its forward function, what _annotated_params found): signatures and type
#: hints are read once per class, not once per trace (a training loop traced step by step)
_CLASS_PARAMS: "weakref.WeakKeyDictionary[type, tuple]" = weakref.WeakKeyDictionary()


def _class_params(cls: type, module) -> tuple | None:
    """:func:`_annotated_params` of ``module``, kept per class while the class's ``forward`` stays
    the same function (a notebook that redefines it gets a new class or a new function)."""
    forward = getattr(cls, "forward", None)
    try:
        entry = _CLASS_PARAMS.get(cls)
    except TypeError:
        entry = None
    if entry is not None and entry[0] is forward:
        return entry[1]
    params = _annotated_params(module)
    if "forward" not in getattr(module, "__dict__", {}):  # not an instance's own forward
        try:
            _CLASS_PARAMS[cls] = (forward, params)
        except TypeError:
            pass
    return params


def _annotated_params(module) -> tuple | None:
    """``((position, tokens), ...)`` for forward's positional parameters with a jaxtyping
    array annotation, or None when it has none (most modules: nn.Linear, nn.LayerNorm)."""
    from ._spec import _annotations, _tensor_annotation

    forward = getattr(module, "forward", None)
    if forward is None or not getattr(inspect.unwrap(forward), "__annotations__", None):
        return None
    try:
        params = [p for p in inspect.signature(forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    hints = _annotations(forward, params)
    out = []
    for position, p in enumerate(params):
        annotation = _tensor_annotation(hints.get(p.name))
        dim_str = getattr(annotation, "dim_str", None)
        if isinstance(dim_str, str) and dim_str.strip():
            out.append((position, dim_str.split()))
    return tuple(out) or None
