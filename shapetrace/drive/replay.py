"""A target checked by replaying its first call in its own code (``owncalls``).

The call is re-made at the probe sizes where it can be (``_remade``): every tensor input's axes
named by the dims its name or annotation gives, each constructor argument whose value is one of
those sizes set to that dim, everything else passed as the code passed it. Where it cannot be,
or where a finding made at the probe sizes does not show at the code's own sizes, the instance
its code built is checked at the inputs it passed, with sizes named only where the model states
them (``naming.proven``), as ``st.trace(model)`` names them.
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch

from ..base.source import class_file
from .owncalls import SECONDS, Captured, class_key, own_calls



def checked_by_own_call(target, job, reuse=None, reference=None):
    """``(result, note)``: ``target`` checked by replaying its first call in its own code
    (``result`` None when there is none, or it could not be replayed; ``note`` then says why,
    or is None when no code of its own was tried)."""
    cls = target.cls
    path = class_file(cls)
    if not path:
        return None, None
    module = sys.modules.get(cls.__module__)
    classes = [cls] if "::" in target.spec else [
        v for v in vars(module).values() if isinstance(v, type)
        and issubclass(v, torch.nn.Module) and v.__module__ == cls.__module__] or [cls]
    seconds = SECONDS if not job.timeout else min(SECONDS, job.timeout / 2)
    calls_from = tuple(_located(job.root, p) for p in job.calls_from)
    found = own_calls(path, classes, calls_from=calls_from, single=len(classes) == 1,
                      seconds=seconds, absent=target.absent)
    captured = found.found.get(class_key(cls))
    if captured is None:
        return None, found.why_not(cls)
    return _replayed(target, job, captured, reuse, reference)


def _located(root, path: str) -> str:
    path = os.path.expanduser(path)
    base = str(root) if root is not None else os.getcwd()
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(base, path))


def _replayed(target, job, captured: Captured, reuse, reference):
    """The captured call replayed: the trace, the rules and the behaviour checks at the inputs
    its own code used. Re-made at the probe sizes first where it can be (``_remade``), so
    that every axis is named; at the code's own sizes when it cannot, or when a finding made
    at the probe sizes does not show at the code's own sizes (a layout read from names may be
    wrong: a finding must hold for the call the code makes)."""
    from .parent import _as_inputs

    inputs = _as_inputs(captured.instance, captured.args, captured.kwargs)
    if inputs is None:
        return None, (f"its own call ({captured.where()}) passes arguments forward takes as "
                      f"*args or **kwargs: checked with inputs shapetrace chose")
    remade = _remade(target, job, captured, inputs, reuse, reference)
    if remade is not None and remade.ok:
        remade.notes.insert(0, f"built and called as its own code does ({captured.where()}), "
                               f"at the probe sizes")
        return remade, None
    result = _at_own_sizes(target, job, captured, inputs, reuse, reference)
    if result.error is not None:
        return None, (f"its own call ({captured.where()}) could not be replayed "
                      f"({result.error}): checked with inputs shapetrace chose")
    if remade is not None and remade.error is None and not result.ok:
        remade.notes.insert(0, f"built and called as its own code does ({captured.where()}), "
                               f"at the probe sizes")
        return remade, None
    result.notes.insert(0, f"checked with the call its own code makes ({captured.where()}), "
                           f"at the sizes that code uses")
    return result, None


def _at_own_sizes(target, job, captured: Captured, inputs, reuse, reference):
    """The instance its code built, at the inputs it passed; sizes named only where the model
    or the annotations of its forwards state them, as ``st.trace(model)`` names them
    (``_proven``)."""
    from ..base.diagnostics import Skip
    from ..base.dims import Dims
    from .check import WATCHED, check_target

    try:
        dims = Dims.declared({**_proven(captured), **job.dims})
    except Exception:  # noqa: BLE001 - sizes that name nothing consistently: none named
        dims = Dims.declared({})
    named = "B" in dims.explicit
    result = check_target(captured.instance, inputs=inputs, dims=dims, causal=job.causal,
                          target=target.display, reuse=reuse, reference=reference,
                          behaviour=named)
    if not named:  # which axis is the batch is not guessed at the code's own sizes
        result.skips = [Skip(s.checks, _UNNAMED) if s.reason.startswith("not asked for")
                        else s for s in result.skips or ()]  # none on a run that failed
        result.notes.append(f"{', '.join(WATCHED)} not checked: {_UNNAMED} (give --dims "
                            f"B=SIZE to name it)")
    return result


_UNNAMED = "at the sizes its own code uses, nothing names the batch axis"


def _clear_of(own: dict, given, kept_as_given=()) -> dict:
    """Probe sizes for the lengths that neither equal nor neighbour a size kept as
    the code gave it (``own``: 7 tokens and a class token are 8, the head count a call kept), nor
    a constructor number kept as given split by it (a width of 96 in 8 heads of 12)."""
    from ..base.dims import DEFAULT_SIZES, Dims
    from ..base.ops import next_prime

    made = set(own.values()) | {k // h for k in kept_as_given for h in own.values()
                                if h > 1 and k % h == 0}
    kept = {v + step for v in made for step in (-1, 0, 1)}
    taken = set(Dims({**own, **given}).values())
    sizes = {}
    for name in ("T", "S"):  # a length and a token more or less: a class token, a shift
        size = DEFAULT_SIZES[name]
        if name not in given and name not in own and size in kept:
            size = sizes[name] = next_prime(size, avoid=kept | taken)
            taken.add(size)
    return sizes


def _filled(value: torch.Tensor):
    """The one value a tensor the names do not size is remade with at the probe sizes: the value
    it holds throughout (a mask of ones), or for a mask of True and False the one most of it
    holds (a padding mask that keeps most positions keeps all: nothing is masked that the code
    did not mask); None for any other tensor."""
    if value.numel() == 0:
        return None
    first = value.flatten()[0].item()
    if bool((value == first).all()):
        return first
    if value.dtype == torch.bool:
        return bool(value.float().mean() >= 0.5)
    return None


def _proven(captured: Captured) -> dict:
    """The sizes the captured call proves, as ``st.trace(model)`` proves them at a user's
    sizes (``naming.proven``): the model's attributes and config, and the jaxtyping
    annotations of the forwards the call runs; never a probe size read from a number."""
    from ..naming.proven import proven_dims
    from ..report.trace import Trace
    from .preserve import preserved

    try:
        with preserved(captured.instance), torch.no_grad():
            trace = Trace(captured.instance, rules=False, probes=False, probe_names=False)
            with trace:
                captured.instance(*captured.args, **captured.kwargs)
            return trace.dims.as_dict()
    except Exception:  # noqa: BLE001 - the call fails: the checks say where
        return proven_dims(captured.instance)


def _remade(target, job, captured: Captured, inputs, reuse, reference):
    """The class built and called at the probe sizes as its code builds and calls it: each
    tensor input's axes named by the dims its name or annotation gives (``infer_inputs``), each
    constructor argument whose value is one of those sizes (and whose own name says no other
    dim) set to that dim, everything else passed as the code passed it. None when it cannot be
    re-made so (constructor arguments not read, an input no name sizes, a size two dims share,
    integer or boolean tensors)."""
    from ..base.dims import Dims
    from ..base.errors import ShapetraceError
    from ..base.names import size_of
    from ..base.specs import InputSpec, ValueInput
    from .check import check_target
    from .infer import infer_inputs
    from .preserve import preserved

    if captured.init is None or not isinstance(target.cls, type):
        return None
    try:
        dims = Dims(job.dims)
        guessed = {spec.name: spec for spec in infer_inputs(type(captured.instance), dims)}
    except (ShapetraceError, Exception):  # noqa: BLE001 - nothing names the inputs
        return None
    named: dict[int, str] = {}
    specs = []
    constants = []  # (place, name, value): a tensor of one value throughout (a mask of ones)
    for given in inputs:
        value = given.value
        if not isinstance(value, torch.Tensor):
            specs.append(given)
            continue
        spec = guessed.get(given.name)
        axes = getattr(spec, "dims", None)
        if not value.is_floating_point() or axes is None or len(axes) != value.dim() \
                or not all(isinstance(a, str) and a.isidentifier() for a in axes):
            fill = _filled(value)
            if fill is None:
                return None
            constants.append((len(specs), given.name, value, fill))
            specs.append(None)
            continue
        # keys guessed of a length of their own (S) that the call makes as long as the queries
        axes = tuple("T" if a == "S" and named.get(size) == "T" else a
                     for size, a in zip(value.shape, axes))
        for size, axis in zip(value.shape, axes):
            if named.setdefault(size, axis) != axis:
                return None  # one size, two dims: which a constructor argument means is unknown
        specs.append(InputSpec(given.name, tuple(axes)))
    if len(set(named.values())) != len(named):
        return None  # one dim, two sizes: the names do not fit this call
    if any(size != 1 and size not in named for *_, value, _ in constants for size in value.shape):
        return None
    init, own = {}, {}
    for name, value in captured.init.items():
        said = size_of(name, constructor=True)
        if type(value) is int and value in named and said in (None, named[value]):
            init[name] = named[value]
        else:
            init[name] = value
            if type(value) is int and value > 1 and said in ("H", "d") and said not in own:
                own[said] = value  # a head count kept as the code gave it, named by its name
    if not any(isinstance(v, str) and v in named.values() for v in init.values()):
        return None  # no constructor argument follows the sizes: nothing scales with them
    try:
        kept_as_given = [v for v in init.values() if type(v) is int and v > 1]
        dims = Dims({**_clear_of(own, job.dims, kept_as_given), **own, **job.dims}) \
            if own and not own.keys() & set(named.values()) else dims
    except (ShapetraceError, Exception):  # noqa: BLE001 - a size two probe names would share
        pass
    for place, name, value, fill in constants:  # its axes named by the sizes the others named
        shape = tuple(1 if size == 1 else dims[named[size]] for size in value.shape)
        specs[place] = ValueInput(name, torch.full(shape, fill, dtype=value.dtype))
    mixed = [s if isinstance(s, ValueInput) else str(s) for s in specs]
    handed = [v for value in init.values() for v in (value if isinstance(value, (list, tuple)) else [value])
              if isinstance(v, torch.nn.Module)]  # modules the code built, handed in: left as they were
    try:
        with contextlib.ExitStack() as stack:
            for module in handed:
                stack.enter_context(preserved(module))
            return check_target(type(captured.instance), init=init, inputs=mixed, dims=dims,
                                causal=job.causal, target=target.display, reuse=reuse,
                                reference=reference)
    except Exception:  # noqa: BLE001 - a constructor that does not take these values again
        return None

