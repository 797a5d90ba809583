"""stateful-forward: a call that leaves state the next call reads.

In eval, a module's output is a function of its inputs and its weights. A forward that writes its
own state (a table cached from the first call's length, a bias added to a parameter in place, a
tensor attribute updated each call) makes the next call answer differently. The probe's other
checks start every run from the state as copied (``state.ModuleState``), which hides exactly
this, so it is checked on its own: one call, then a second without putting the state back, on
the same inputs and on inputs cut to a shorter length, each compared with the same call on the
state as copied. When they differ, the finding is at the op that made the value the first call
left behind.

Not findings: state with a batch axis (a KV cache or a recurrent memory kept for the next call:
the module is built to carry it), a second call whose outputs have other shapes (an incremental
decode that lengthened its cache), a table built lazily that is the same on the second call (the
outputs agree), running statistics (the probe runs in eval).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from ..base.records import OpRecord, TraceData
from ..record.tensors import tensors_in
from ..record.tracer import Recorder
from ..rules.registry import diagnostic
from .errors import raised_by_user
from .probe import Probe
from .runs import flatten, fresh, math_sdpa, relative_change
from .results import RTOL

#: How much shorter the second call's inputs are, along every axis of size T.
_CUT = 2


def stateful_forward(probe: Probe, first) -> list:
    """The ``stateful-forward`` finding for the probe, or nothing. ``first`` is the output of a
    call on the state as copied (the reference run)."""
    if not probe._state.changed():
        return []  # the last run (each starts from the state as copied) changed nothing
    T = probe.T
    cuts = [(probe.args, probe.kwargs, first)]
    if T - _CUT >= 2:
        short = (_cut(probe.args, T), _cut(probe.kwargs, T))
        try:
            with torch.no_grad():
                cuts.append((*short, probe.call(*short)))
        except Exception:  # noqa: BLE001 - a module that needs its full length: same inputs only
            pass
    try:
        made, changed = _first_call(probe)
        if not changed or _follows_inputs(probe, changed):
            return []
        for args, kwargs, fresh_out in cuts:
            try:
                with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    again = probe.model(*fresh(args), **fresh(kwargs))
            except Exception as exc:  # noqa: BLE001 - the same call ran on the module as built
                if not raised_by_user(exc):
                    raise
                return [_finding(probe, changed, made, None, same=args is probe.args,
                                 raised=f"{type(exc).__name__}: {exc}")]
            change = _change(fresh_out, again)
            if change is None:
                return []  # other shapes: a cache lengthened by an incremental decode
            if change > RTOL:
                changed = _that_matter(probe, changed, args, kwargs, fresh_out) or changed
                read = _read_by_next(probe, changed, args, kwargs)
                return [_finding(probe, changed, made, change, same=args is probe.args, read=read)]
            probe.restore_state()
            made, changed = _first_call(probe)
        return []
    finally:
        probe.restore_state()


def _first_call(probe: Probe) -> tuple[dict[int, OpRecord], list[tuple[str, Any]]]:
    """One recorded call on the state as copied; the op that made each tensor it returned or
    wrote (by object and by storage), and the state it changed: ``[(name, value)]``, empty when
    any of it has a batch axis (state the module keeps per sample on purpose)."""
    made: dict[int, OpRecord] = {}
    kept: list = []

    def keep(rec: OpRecord, outs: tuple, op_args: tuple, op_kwargs: dict) -> None:
        for t in outs:
            kept.append(t)  # alive until the run is read, so that ids stay unique
            made[id(t)] = rec
            try:
                made[t.data_ptr()] = rec
            except Exception:  # noqa: BLE001 - a tensor without storage
                pass

    trace = TraceData(probe.dims)
    recorder = Recorder(trace, probe.model, root=probe.root, probes=False, observer=keep)
    args, kwargs = fresh(probe.args), fresh(probe.kwargs)
    probe.restore_state()
    with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with recorder:
            probe.model(*args, **kwargs)
    changed = probe._state.changed()
    if any(probe.B in t.shape for _, value in changed for t in tensors_in(value)):
        return made, []
    return made, changed


def _that_matter(probe: Probe, changed: Sequence[tuple[str, Any]], args, kwargs, fresh_out) -> list:
    """The state a first call left that alone makes the next call differ (a bias cached and
    added again, not the causal mask cached beside it): for each name, a first call, then
    everything else put back, then the call again. Empty when no one name does it alone."""
    names = list(dict.fromkeys(k for k, _ in changed))
    if len(names) < 2:
        return []
    matter = [name for name in names
              if (change := _change(fresh_out, _next_call(probe, args, kwargs, keep=name))) is not None
              and change > RTOL]
    return [(k, v) for k, v in changed if k in matter]


def _read_by_next(probe: Probe, changed: Sequence[tuple[str, Any]], args, kwargs) -> OpRecord | None:
    """The first op of the user's code that reads the state a first call left, in the call
    after it (``qk_sim + self.bias[...]``), or None."""
    names = {k for k, _ in changed}
    wanted: set[int] = set()
    found: list[OpRecord] = []

    def reads(rec: OpRecord, outs: tuple, op_args: tuple, op_kwargs: dict) -> None:
        if found or rec.site is None:
            return
        if any(id(t) in wanted or (t.numel() and t.data_ptr() in wanted)
               for t in tensors_in((op_args, op_kwargs))):
            found.append(rec)

    def left() -> None:  # what the first call left, once it has run
        kept = [t for k, value in probe._state.changed() if k in names for t in tensors_in(value)]
        wanted.update({id(t) for t in kept} | {t.data_ptr() for t in kept if t.numel()})

    _next_call(probe, args, kwargs, observer=reads, after_first=left)
    return found[0] if found else None


def _next_call(probe: Probe, args, kwargs, *, keep: str | None = None, observer=None,
               after_first=None):
    """A first call on the state as copied, then a call on ``args``/``kwargs`` on the state it
    left (all of it, or only ``keep``; recorded with ``observer`` when given); its output. The
    state as copied is put back afterwards."""
    probe.restore_state()
    try:
        with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe.model(*fresh(probe.args), **fresh(probe.kwargs))
            if keep is not None:
                probe._state.restore(keep={keep})
            if after_first is not None:
                after_first()
            if observer is None:
                return probe.model(*fresh(args), **fresh(kwargs))
            with Recorder(TraceData(probe.dims), probe.model, root=probe.root, probes=False,
                          observer=observer):
                return probe.model(*fresh(args), **fresh(kwargs))
    finally:
        probe.restore_state()


def _follows_inputs(probe: Probe, changed: Sequence[tuple[str, Any]]) -> bool:
    """Whether the state a call leaves depends on the values of its inputs (a running mean, a
    memory of what was seen: statistics the module keeps on purpose), rather than on their
    shapes or on nothing (a table for the first length, a counter, a parameter shifted)."""
    gen = torch.Generator().manual_seed(3)

    def moved(v):
        if isinstance(v, Tensor) and v.is_floating_point():
            return v + torch.randn(v.shape, generator=gen, dtype=v.dtype) * (v.abs().mean() + 1)
        return v
    args = [moved(a) for a in probe.args]
    kwargs = {k: moved(v) for k, v in probe.kwargs.items()}
    before = [[t.clone() for t in tensors_in(value)] for _, value in changed]
    try:
        probe.call(args, kwargs)
    except Exception:  # noqa: BLE001 - not judged when the module cannot run on other values
        return True
    after = dict(probe._state.changed())
    for (name, _), saved in zip(changed, before):
        now = [t for t in tensors_in(after.get(name))]
        if len(now) != len(saved) or any(a.shape != b.shape or not torch.equal(a, b)
                                         for a, b in zip(now, saved)):
            return True
    return False


def _cut(values, T: int):
    """The inputs with every axis of size T cut to its first T - _CUT entries."""
    def cut(v):
        if not isinstance(v, Tensor):
            return v
        for axis, size in enumerate(v.shape):
            if size == T:
                v = v.narrow(axis, 0, T - _CUT)
        return v.clone()
    if isinstance(values, Mapping):
        return {k: cut(v) for k, v in values.items()}
    return [cut(v) for v in values]


def _change(a, b) -> float | None:
    """The largest relative change between two outputs; None when their shapes differ."""
    fa, fb = list(flatten(a)), list(flatten(b))
    if len(fa) != len(fb):
        return None
    worst = 0.0
    for (_, _, x), (_, _, y) in zip(fa, fb):
        if x.shape != y.shape:
            return None
        if x.is_floating_point():
            worst = max(worst, relative_change(y, x))
    return worst


def _finding(probe: Probe, changed: Sequence[tuple[str, Any]], made: Mapping[int, OpRecord],
             change: float | None, *, same: bool, raised: str | None = None,
             read: OpRecord | None = None):
    rec, name = None, changed[0][0]
    for key, value in changed:
        for t in tensors_in(value):
            found = made.get(id(t))
            if found is None:
                try:
                    found = made.get(t.data_ptr())
                except Exception:  # noqa: BLE001
                    found = None
            if found is not None and found.site is not None:
                rec, name = found, key
                break
        if rec is not None:
            break
    names = ", ".join(f"`{k}`" for k in dict.fromkeys(k for k, _ in changed))
    inputs = "the same inputs" if same else f"inputs {_CUT} positions shorter"
    where = f" (`{rec.source}` at {rec.file}:{rec.line})" if rec is not None else ""
    if raised is not None:
        what = f"raises ({raised}), where the same call on a fresh module runs"
    else:
        what = f"differs from the same call on a fresh module by up to {change:.3g} (relative)"
    read_at = f"; the next call reads it at {read.file}:{read.line} (`{read.source or read.op}`)" \
        if read is not None and read.file else ""
    message = (f"the forward changes the module's own state ({names}), and the next call reads "
               f"it: after one call, a call on {inputs} {what}. `{name}` is written here{where}"
               f"{read_at}")
    hint = ("compute the value inside forward each call (or keep it in a buffer built once, in "
            "__init__, for the longest length), and never update a parameter or a table in place "
            "in forward")
    return diagnostic("stateful-forward", message, hint, rec=rec,
                      module=None if rec is not None else probe.root, state=[k for k, _ in changed])
