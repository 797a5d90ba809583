"""Values watched in the steps of a training run that are not recorded, without reading them.

On a GPU every value read back to the host (``.item()``, ``bool(t)``, ``.tolist()``) waits for
the device to finish what it was given: once per step, that stalls the loop. So the steps that
are only counted (``record.steps``) look at values on the device and read nothing: each leaves a
flag, a one-element tensor that says whether what was looked at held a NaN or an Inf, and the
flags are read together every ``every`` steps and when the trace ends.

What a step leaves:

- ``forward``: whether the step module's output holds a NaN;
- ``gradients``: before each optimizer step, whether one small gradient (the sentinel, a first
  layer's bias, which every NaN the backward makes reaches) holds a NaN or an Inf;
- ``parameters``: after each optimizer step, whether that parameter holds one.

So that a forward found to hold a NaN can be run again, recorded, as it ran (its inputs, random
state, parameters and buffers), the watch keeps on the device a copy of the state the first
flagged forward began with: each step's state is copied at its start (one concatenation into a
flat buffer per dtype), and becomes the kept copy while no step before it was flagged (one
``torch.where`` on the flag: no value read, NaN or not); the step's tensor arguments likewise. A model whose floating parameters and buffers hold more than
:data:`STATE_LIMIT` elements keeps no copy: its bad step is still named exactly, without the run
again that finds the op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..base.compat import disable_torch_function, quietly
from .tensors import tensors_in

Tensor = torch.Tensor
_vector_norm = torch.linalg.vector_norm
#: the most elements whose peak is read in one op (see :func:`_peak`): the size up to which a
#: parameter is a sentinel before any larger one (``record.steps``)
_ONE_OP = 4096

#: steps between two reads of the flags
EVERY = 50
#: the most elements of floating parameters and buffers whose copy is kept for a run again
STATE_LIMIT = 50_000_000


@dataclass
class Flag:
    """One flag left by a step: ``kind`` is ``forward``, ``gradients`` or ``parameters``."""

    kind: str
    step: int
    optimizer_step: int
    #: one float on the device, NaN when what was looked at held one: for gradients and
    #: parameters the largest magnitude (inf for an Inf), for a forward the largest value
    #: (only a NaN flags it); the number itself once read
    value: Tensor | float
    optimizer: str = ""
    owner: object = None  # the optimizer, for gradients and parameters


class DeviceFlags:
    """The flags of the unrecorded steps since the last read, and the state of the first
    forward flagged among them."""

    def __init__(self, every: int = EVERY):
        self.every = every
        self.flags: list[Flag] = []
        self.reads = 0  # times the flags were read back
        self._state: list[Tensor] | None = None  # the module's floating params and buffers
        #: their copies at the start of this step and of the first bad one, flat per dtype
        self._groups: list[_Group] | None = None
        self._args: list | None = None  # that step's tensor arguments (copies)
        self._args_since = 0  # the first step the argument copies can be of
        self._seen: Tensor | None = None  # whether a forward was flagged since the last read
        self._step = 0
        self._structure: tuple = ((), {})  # the last step's arguments, as it was called
        self._rng: dict[int, tuple] = {}  # step -> the random state it began with
        self.kept_step: int | None = None  # the step whose state ``_kept`` may hold

    # --- a step ------------------------------------------------------------------------------

    def begin(self, step: int, module: torch.nn.Module, rng) -> None:
        """An unrecorded step begins: its random state kept, its state copied on the device."""
        self._rng[step] = rng
        state = self._module_state(module)
        if state is None:
            return
        with quietly():
            if self._groups is None:
                self._groups = _Group.of(state)
            for group in self._groups:
                group.copy_start()
                if self._seen is None:
                    group.kept.copy_(group.start)
                else:  # kept: the start of the first step flagged, once one was
                    torch.where(_on(self._seen, group.kept), group.kept, group.start,
                                out=group.kept)

    def forward(self, step: int, optimizer_steps: int, output, args, kwargs) -> None:
        """The step module returned ``output``: flagged when a floating tensor in it holds a
        NaN (an Inf may be meant: logits masked with -inf)."""
        with quietly():
            found = None
            for t in tensors_in(output):
                if t.is_floating_point() and t.numel() and not t.is_meta:
                    # NaN only: the largest value (one pass, no copy) passes a NaN on
                    peak = t.amax()
                    found = peak if found is None else torch.maximum(found, peak)
            if found is None:
                return
            self.flags.append(Flag("forward", step, optimizer_steps, found))
            bad = torch.isnan(found)
            if self._groups is not None:
                self._step = step
                self._structure = (args, kwargs)
                self._keep_args(self._seen, args, kwargs)
                self.kept_step = step
            self._seen = bad if self._seen is None else self._seen | bad

    def _keep_args(self, seen: Tensor | None, args, kwargs) -> None:
        """This step's tensor arguments kept, unless a step before it was flagged (``seen``)."""
        tensors = [t for t in tensors_in((args, kwargs)) if isinstance(t, Tensor)]
        if seen is None or self._args is None or len(self._args) != len(tensors) or any(
                a.shape != t.shape or a.dtype != t.dtype for a, t in zip(self._args, tensors)):
            if seen is not None:
                self._args_since = self._step  # this step's: wrong for a bad step before it
            self._args = [t.detach().clone() for t in tensors]
            return
        for kept, t in zip(self._args, tensors):
            torch.where(_on(seen, kept), kept, t, out=kept)  # quietly: no autograd

    def values(self, kind: str, step: int, optimizer_steps: int, name: str, opt,
               t: Tensor) -> None:
        """Flags ``t`` (the sentinel's gradient or the sentinel itself) when it holds a NaN or
        an Inf."""
        with quietly():
            self.flags.append(Flag(kind, step, optimizer_steps, _peak(t), name, opt))

    # --- reading them ------------------------------------------------------------------------

    def due(self, step: int) -> bool:
        return bool(self.flags) and step % self.every == 0

    def read(self) -> list[Flag]:
        """The flags that are set, in the order they were left; the flags are cleared. One read
        back per device."""
        flags, self.flags = self.flags, []
        if not flags:
            return []
        self.reads += 1
        with disable_torch_function():
            for device in {f.value.device for f in flags}:
                mine = [f for f in flags if f.value.device == device]
                values = torch.stack([f.value.to(torch.float64) for f in mine])
                for f, v in zip(mine, values.tolist()):
                    f.value = v
        # NaN only in a forward's output: an Inf there may be meant (logits masked with -inf)
        return [f for f in flags if math.isnan(f.value)
                or f.kind != "forward" and math.isinf(f.value)]

    def rerun_state(self, step: int, module: torch.nn.Module):
        """``(state copy, argument copies, random state)`` of ``step`` when it is the first
        forward flagged since the last read and its state was kept, else None."""
        rng = self._rng.get(step)
        state = self._module_state(module)
        if self.kept_step is None or rng is None or self._groups is None or state is None \
                or step < self._args_since:
            return None
        return self._groups, self._args, rng

    def settled(self) -> None:
        """After a read: a new window begins."""
        self._seen = None
        self._args_since = 0
        self._rng.clear()
        self.kept_step = None

    def arguments(self, kept: list[Tensor] | None) -> tuple[tuple, dict]:
        """``(args, kwargs)`` of the kept step: the last step's, its tensors the kept copies
        (the steps of one kind take the same arguments, tensors of the same shapes)."""
        args, kwargs = self._structure
        if kept is None:
            return tuple(args), dict(kwargs)
        copies = iter(kept)
        return tuple(_swapped(a, copies) for a in args), \
            {k: _swapped(v, copies) for k, v in kwargs.items()}

    def state_of(self, module) -> list[Tensor]:
        return self._module_state(module) or []

    def _module_state(self, module) -> list[Tensor] | None:
        if self._state is None:
            if not isinstance(module, torch.nn.Module):
                return None
            state = [t for t in (*module.parameters(), *module.buffers())
                     if t.is_floating_point() and not t.is_meta]
            if sum(t.numel() for t in state) > STATE_LIMIT:
                state = []
            self._state = state
        return self._state or None


class _Group:
    """Tensors of one dtype and device, and two flat copies of them with views shaped like
    them: the state at the start of the step, and the state kept."""

    def __init__(self, tensors: list[Tensor]):
        self.tensors = tensors
        first = tensors[0]
        total = sum(t.numel() for t in tensors)
        self.start = torch.empty(total, dtype=first.dtype, device=first.device)
        self.kept = torch.empty_like(self.start)
        sizes = [t.numel() for t in tensors]
        self.start_views = [v.view(t.shape) for v, t in zip(self.start.split(sizes), tensors)]
        self.kept_views = [v.view(t.shape) for v, t in zip(self.kept.split(sizes), tensors)]
        torch._foreach_copy_(self.kept_views, tensors)
        #: each tensor flat, for one concatenation per step (contiguous tensors only)
        self.flat = [t.view(-1) for t in tensors] if all(t.is_contiguous() for t in tensors) \
            else None
        self._places = [t.data_ptr() for t in tensors]

    def copy_start(self) -> None:
        """The tensors as they are now copied into ``start``: one concatenation while they
        still live where they did (``p.data = ...`` moves one)."""
        if self.flat is not None and [t.data_ptr() for t in self.tensors] == self._places:
            torch.cat(self.flat, out=self.start)
        else:
            torch._foreach_copy_(self.start_views, self.tensors)

    @staticmethod
    def of(state: list[Tensor]) -> list[_Group]:
        groups: dict = {}
        for t in state:
            groups.setdefault((t.dtype, t.device), []).append(t)
        return [_Group(ts) for ts in groups.values()]

    def load(self) -> None:
        """The kept state put into the module's tensors."""
        torch._foreach_copy_(self.tensors, self.kept_views)


def _peak(t: Tensor) -> Tensor:
    """The largest magnitude in ``t``, on its device: NaN when it holds a NaN (the maximum
    passes a NaN on), inf when it holds an Inf and no NaN, finite otherwise (no sum that could
    overflow). Runs every step inside ``quietly`` (autograd off: nothing to detach); a small
    tensor (the usual sentinel) in one op, the infinity norm (one op between the loop's kernels
    costs less than two even where its kernel is slower per element); a large one with ``abs``
    and ``amax``, about four times faster per element on a CPU."""
    if t.numel() <= _ONE_OP:
        return _vector_norm(t, math.inf)
    return t.abs().amax()


def _on(flag: Tensor, like: Tensor) -> Tensor:
    """``flag`` on ``like``'s device (itself when it is there already)."""
    return flag if flag.device == like.device else flag.to(like.device)


def _swapped(obj, copies, depth: int = 0):
    """``obj`` with each tensor in it replaced by the next of ``copies``, in the order
    :func:`~shapetrace.record.tensors.tensors_in` finds them."""
    if isinstance(obj, Tensor):
        return next(copies, obj)
    if depth < 3 and isinstance(obj, (tuple, list)):
        return type(obj)(_swapped(x, copies, depth + 1) for x in obj) if type(obj) in (tuple, list) \
            else obj
    if depth < 3 and isinstance(obj, dict):
        return {k: _swapped(v, copies, depth + 1) for k, v in obj.items()}
    return obj


#: Tensor methods that read values back to the host
HOST_READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "nonzero",
              "numpy")


class HostReads:
    """Counts the values shapetrace's own code reads back to the host while entered (wrapping
    the Tensor methods that do it), split by whether the trace's steps were unrecorded at the
    time (``steady``: neither recorded nor reading the flags) or not (``other``). ``trace``:
    the ``shapetrace.trace`` to watch. For tests and benchmarks."""

    def __init__(self, trace):
        import os

        self.trace = trace
        self.steady = 0
        self.other = 0
        self._saved: dict = {}
        self._package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

    def __enter__(self) -> HostReads:
        import sys

        for name in HOST_READS:
            original = getattr(Tensor, name)
            self._saved[name] = original

            def counted(*args, __original=original, **kwargs):
                if sys._getframe(1).f_code.co_filename.startswith(self._package):
                    self._count()
                return __original(*args, **kwargs)

            setattr(Tensor, name, counted)
        return self

    def __exit__(self, *exc) -> bool:
        for name, original in self._saved.items():
            setattr(Tensor, name, original)
        self._saved.clear()
        return False

    def _count(self) -> None:
        recorder = getattr(self.trace, "_recorder", None)
        watch = getattr(recorder, "steps", None)
        if recorder is not None and recorder.light and watch is not None and not watch.checking:
            self.steady += 1
        else:
            self.other += 1
