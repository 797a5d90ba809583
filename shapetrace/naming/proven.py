"""Sizes the user's code proves while it runs at its own sizes (SPEC section 2).

At the user's sizes nobody chose primes, so a size names an axis only when something states
what it is:

- the model's attributes and config (``n_embd`` -> C, ``n_head`` -> H: :func:`proven_dims`);
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

import functools
import threading
import weakref
from collections.abc import Iterable, Mapping

from ..base.compat import all_modules, module_tensors
from ..base.dims import Dims, resolve_dims
from ..base.errors import UsageError
from ..base.names import CONFIG, STATED
from ..record.hooks import hooked, unhook
from .hints import annotated_params, bind_tokens, may_annotate_arrays


class SizeWitness:
    """Watches the forward calls inside one trace (the thread that entered only) and keeps
    the sizes their annotations, and the traced model's declared inputs, bind. It has no
    global module hook of its own: the recorder's hands it each module call it records
    (:meth:`observe`), so that it is off with the recorder between the steps a trace does not
    record (a repeated step binds nothing new)."""

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

    def __enter__(self) -> SizeWitness:
        self._owner = threading.get_ident()
        if self.specs:
            self._handles.append(hooked(self.model.register_forward_pre_hook, self._declared,
                                        with_kwargs=True))
        return self

    def __exit__(self, *exc_info) -> bool:
        unhook(self._handles)
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

    def observe(self, module, args) -> None:
        """A call of ``module`` with ``args`` on the watched thread: the sizes its forward's
        annotations bind."""
        cls = type(module)
        params = self._forwards.get(cls, False)
        if params is False:
            params = self._forwards[cls] = _annotated(module)
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
    from ..base.specs import InputSpec, parse_input

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


_READ = CONFIG | STATED.keys()


#: forward functions with no parameter annotation that may be an array type (most modules:
#: nn.Linear, nn.LayerNorm), found once for every trace: their annotations bind nothing
_PLAIN_FORWARDS: weakref.WeakSet = weakref.WeakSet()


def _annotated(module) -> tuple | None:
    """:func:`~shapetrace.naming.hints.annotated_params` of ``module``; a class's own forward
    that annotates no array is looked at once per process, not once per trace."""
    forward = None if "forward" in vars(module) else getattr(type(module), "forward", None)
    try:
        if forward in _PLAIN_FORWARDS:
            return None
    except TypeError:  # a forward that cannot be weakly referenced: looked at every time
        forward = None
    if forward is not None and not may_annotate_arrays(forward):
        try:
            _PLAIN_FORWARDS.add(forward)
        except TypeError:
            pass
        return None
    return annotated_params(module)


def proven_dims(model, modules: list | None = None) -> dict[str, int]:
    """Sizes the model itself states: attributes of it and its submodules, and of their
    ``config`` (a dataclass or a Hugging Face config): ``n_embd`` -> C, ``n_head`` -> H,
    ``head_size`` -> d, ``block_size`` -> L, ``vocab_size`` -> V. A name given two different
    sizes by two modules proves nothing and is left out. ``modules``: the model and its
    submodules when the caller already has them (``base.compat.all_modules``).
    """
    if model is None or not hasattr(model, "modules"):
        return {}
    seen: dict[str, set[int]] = {}
    for module in all_modules(model) if modules is None else modules:
        own = vars(module)
        found = own.keys() & _READ  # one pass over the module's attributes; most find nothing
        if not found:
            continue
        sources = [own]
        for key in found & CONFIG:
            config = own[key]
            if config is not None and hasattr(config, "__dict__") and not callable(config):
                sources.append(vars(config))
        for attrs in sources:
            hits = attrs.keys() & STATED.keys()  # most modules (Linear, LayerNorm): none
            for name in hits:
                value = attrs[name]
                if isinstance(value, int) and not isinstance(value, bool) and value > 1:
                    seen.setdefault(STATED[name], set()).add(value)
    return {dim: next(iter(values)) for dim, values in seen.items() if len(values) == 1}


def run_dims(model, witness: SizeWitness, declared: Mapping[str, int], records, *,
             probe_names: bool = True, weights: set | None = None,
             modules: list | None = None) -> Dims:
    """The names of the sizes a block ran at, nobody having chosen them for shapetrace: what
    ``declared`` (``dims=``) says, what the model's attributes and the annotations and declared
    inputs ``witness`` saw prove (a name given two sizes is left out; ``declared`` overrides
    them all), and the probe defaults only when the data that entered the block came at probe
    sizes and ``probe_names`` allows them (``resolve_dims``). ``weights``: the shapes of the
    model's parameters and buffers (:func:`weight_shapes`) and ``modules`` the model and its
    submodules (``base.compat.all_modules``) when the caller has them."""
    import torch

    if modules is None:
        modules = all_modules(model) if isinstance(model, torch.nn.Module) else []
    attributes = proven_dims(model, modules)
    proven = witness.proven(attributes)
    known = {**proven, **declared}
    # a model's constants (a 64-wide buffer) say nothing
    own = _weight_shapes(model, modules) if weights is None else weights
    entering = [m.shape for rec in records  # of the sizes it runs at: the data's do
                for m in (rec.inputs if rec.inputs else rec.outputs)  # torch.randn(...)
                if (m._made_by is None or not rec.inputs) and m.shape not in own]
    sizes = [s for shape in entering for s in shape]
    if probe_names and not _off_probe(proven, declared):
        dims = resolve_dims(known, sizes)
    else:
        dims = Dims.declared(known)
    if dims.strict:
        stated = set(declared) | set(witness.seen)
        unnamed = _unnamed_sizes(dims, stated, entering, records)
        if unnamed:
            dims = Dims.declared(known, unnamed=unnamed)
    return dims


#: the probe names a model's own sizes are compared with: a vocabulary or a block size is
#: never the probe's (19, 23) and says nothing about whether the block ran at probe sizes
_PROBED = ("B", "T", "S", "H", "d", "C")


def _off_probe(proven: dict, declared: dict) -> bool:
    """Whether the model states a size that is not its probe size (``n_embd = 16``, where the
    probe C is 143, or what ``dims=`` makes it): then the block did not run at probe sizes, and a
    7 in it is not T nor a 10 ``2*B``."""
    probe = Dims(declared) if declared else _probe_sizes()
    return any(name in probe and probe[name] != size
               for name, size in proven.items() if name in _PROBED and name not in declared)


@functools.lru_cache(maxsize=1)
def _probe_sizes() -> Dims:
    """The probe sizes nothing overrides (a ``Dims`` is immutable: made once)."""
    return Dims()


#: names of a model's insides: the data a model is given has no axis of these (its mask of
#: block_size is a buffer), so an axis of the data that has their size is something else
_INNER = frozenset(("H", "d", "L"))


def _unnamed_sizes(dims: Dims, stated: set, entering: list, records) -> set[int]:
    """Sizes that a name only the model's attributes prove (``n_embd = 8`` -> C) shares with an
    axis of the data that nothing names: in ``x`` of shape ``(3, 8, 8)`` one 8 is C and the
    other is T, and ``(2, 2, 8)`` beside a head size of 2 has no head axis at all. Printing the
    name there would call the time axis C or the batch d; the size prints as its number.

    Only the data that enters the model is read (tensors from outside the block, and tensors
    made outside any module, such as ``torch.randn(2, 10, 64)`` in the block), and only names
    nobody stated for this run (``dims=``, an annotation, a declared input): those name the
    axes they were bound from.
    """
    guessed = {name: size for name, size in dims.items() if name not in stated and size > 1}
    if not guessed:
        return set()
    outside = [m.shape for rec in records if not rec.inputs and not rec.module
               for m in rec.outputs]
    unnamed: set[int] = set()
    shapes = [*entering, *outside]
    for name, size in guessed.items():
        for shape in shapes:
            count = sum(1 for s in shape if s == size)
            if count > (0 if name in _INNER else 1):
                unnamed.add(size)
                break
    return unnamed


def weight_shapes(model, modules: list | None = None) -> set[tuple[int, ...]]:
    """The shapes of the parameters and buffers of ``model`` (empty without one); ``modules``:
    the model and its submodules when the caller has them."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return set()
    return _weight_shapes(model, all_modules(model) if modules is None else modules)


def _weight_shapes(model, modules: list) -> set[tuple[int, ...]]:
    """The shapes of the parameters and buffers of ``model`` (its ``modules``)."""
    return {tuple(t.shape) for t in module_tensors(model, modules)}
