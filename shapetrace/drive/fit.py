"""Probe sizes that fit in memory: refuse, before anything is allocated, sizes whose tensors
would not (``--dims B=64,T=4096``), and say so when an allocation fails anyway.

Without this, a run at sizes too large for the machine fails inside the user's code (the
attention scores' matmul asks for 47 GB) and reads as the user's bug (``op-failed`` with a
transpose hint) or as shapetrace's ("internal error"). Instead:

- **Before the run**, when the sizes are large enough that they might not fit
  (:func:`worth_estimating`), the module is built and run once on fake tensors (``record.fake.ShapesOnlyMode``: shapes and dtypes, no
  storage) while :class:`MemoryMeter` adds up the bytes each op's outputs would hold and frees
  them as the fake tensors die, so its peak is the peak of the real forward (parameters,
  inputs, activations alive at once). Views and in-place results share their input's storage
  and are not counted. :func:`ensure_fits` compares that peak, times :data:`SAFETY`, with the
  memory this machine has free (:func:`available_memory`) and raises :class:`TooLarge`, one
  line naming the sizes, when it does not fit. The behaviour checks re-run a float64 copy with
  autograd and one gradient row per sample and time step; when only they would not fit, they
  are skipped with a note instead.
- **During the run**, an allocation that fails anyway (:func:`out_of_memory`) becomes the same
  kind of one-line :class:`TooLarge`, not a finding in the user's code.

A fake run that cannot complete (an op that needs values, ``.item()``) gives no estimate: the
real run goes ahead and the allocation check still applies.
"""

from __future__ import annotations

import os
import re
import warnings
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..base.dims import DEFAULT_SIZES
from ..base.errors import UsageError

#: The estimate times this must fit: the allocator's slack, the value probes' temporaries.
SAFETY = 1.25
#: Bytes kept free besides: the interpreter, torch's own buffers, the trace and the report.
HEADROOM = 256 * 2**20
#: The default size of a dim without one of its own (C = H*d).
_DEFAULT_OTHER = DEFAULT_SIZES["H"] * DEFAULT_SIZES["d"]
#: A constructor argument this large (``vocab_size=50257``) may size a large tensor.
_LARGE_INIT = 1024

#: torch's own words for an allocation that failed or a byte count that overflowed
_OOM = re.compile(r"DefaultCPUAllocator: can't allocate memory|CUDA out of memory|"
                  r"Storage size calculation overflowed")
_BEHAVIOUR = "batch-leak, causal-leak and nondeterministic-eval"
_TRIED = re.compile(r"tried to allocate (\d+) bytes")


class TooLarge(UsageError):
    """Probe sizes whose tensors do not fit in this machine's memory."""


@dataclass(frozen=True)
class Memory:
    """What this machine can give: ``free`` bytes, or when that is unknown (not Linux) the
    physical memory ``in all``."""

    bytes: int
    free: bool = True

    def describe(self) -> str:
        if self.free:
            return f"only {gigabytes(self.bytes)} of memory is free"
        return f"this machine has {gigabytes(self.bytes)} of memory in all"


@dataclass(frozen=True)
class Estimate:
    """Peak bytes of one forward at these sizes (no autograd), and of the behaviour checks."""

    forward: int
    behaviour: int


def gigabytes(n: int) -> str:
    """``47244640256`` -> ``"47 GB"``; below 1 GB in MB."""
    if n >= 10**9:
        return f"{n / 10**9:.0f} GB" if n >= 10**10 else f"{n / 10**9:.1f} GB"
    return f"{max(n / 10**6, 1):.0f} MB"


# --- how much memory there is -------------------------------------------------------------------

def available_memory() -> Memory | None:
    """Free memory: Linux's ``MemAvailable``, lowered to what a cgroup limit (a container) or
    this process's address-space limit (``ulimit -v``) still allows; elsewhere the physical
    memory in all (``os.sysconf``); None when nothing says."""
    free = _meminfo_available()
    if free is not None:
        rooms = [r for r in (_cgroup_room(), _address_space_room()) if r is not None]
        return Memory(min([free, *rooms]))
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        return Memory(pages * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        return Memory(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), free=False)
    except (AttributeError, ValueError, OSError):
        return None


def _address_space_room() -> int | None:
    """What ``ulimit -v`` leaves this process (its limit less its current size), or None."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return max(limit - int(line.split()[1]) * 1024, 0)
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return None


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room() -> int | None:
    """Bytes a cgroup memory limit still allows (v2, then v1), or None without a limit."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file, encoding="ascii") as fh:
                limit = fh.read().strip()
            with open(usage_file, encoding="ascii") as fh:
                usage = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**60:  # v1 writes "no limit" as a huge number
            return max(int(limit) - usage, 0)
    return None


# --- estimating ---------------------------------------------------------------------------------

def worth_estimating(dims: Mapping[str, int], init: Mapping[str, object] | None,
                     memory: Memory, *, behaviour: bool = True) -> bool:
    """Whether the fake run is worth its cost (its first use imports torch's compiler stack,
    about two seconds): when a generous bound on what attention code holds at these sizes is
    more than an eighth of the memory, or a constructor argument is a large number
    (``vocab_size=50257``). The bound is 64 float64 copies of the scores (``B*H*T*T``) and of
    ``B*T`` rows of every width, and with the behaviour checks that again for each of their
    ``B + T`` gradient rows. At the defaults and near them it is a few MB. A model that holds
    more than the bound and does not fit is still caught when an allocation fails."""
    if any(isinstance(v, int) and not isinstance(v, bool) and v >= _LARGE_INIT
           for v in (init or {}).values()):
        return True
    size = {k: dims.get(k, DEFAULT_SIZES.get(k, _DEFAULT_OTHER)) for k in ("B", "T", "S", "H", "V")}
    width = max([dims.get("C", _DEFAULT_OTHER),
                 *(v for k, v in dims.items() if k not in DEFAULT_SIZES and k != "C")])
    L = max(size["T"], size["S"])
    elements = size["B"] * size["H"] * L * L + size["B"] * L * (4 * width + size["V"]) + L * L
    copies = 64 + (4 * (size["B"] + L) if behaviour else 0)
    return copies * 8 * elements > memory.bytes / 8


def _meter_class():
    from ..record.fake import ShapesOnlyMode

    class MemoryMeter(ShapesOnlyMode):
        """A shapes-only mode that adds up the bytes the real tensors would hold: ``live``, its
        ``peak``, and ``made64``, everything the run produced in float64 (what autograd would
        keep for a backward pass at the behaviour checks' precision).

        Bytes are counted per storage, the first time an op's output has one: views and
        in-place results share their input's and add nothing. A weak reference to the storage
        frees its bytes when the last tensor using it dies (not to the tensor: torch refuses to
        swap the contents of a tensor that has one, as ``module.to(dtype)`` does)."""

        def __init__(self):
            super().__init__()
            self.live = self.peak = self.made64 = 0
            self._counted: set[int] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = super().__torch_dispatch__(func, types, args, kwargs)
            if self._depth == 0:
                for t in _tensors(out):
                    self._count(t)
            return out

        def _count(self, t) -> None:
            try:
                storage = t.untyped_storage()
                key = id(storage)
                if key in self._counted:
                    return
                n = storage.nbytes()
                n64 = n * 8 // t.element_size() if t.is_floating_point() else n
                weakref.finalize(storage, self._free, key, n)
            except (RuntimeError, TypeError, NotImplementedError):  # nested, sparse
                return
            self._counted.add(key)
            self.live += n
            self.made64 += n64
            self.peak = max(self.peak, self.live)

        def _free(self, key: int, n: int) -> None:
            self._counted.discard(key)
            self.live -= n

    return MemoryMeter


def _tensors(out):
    import torch

    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (list, tuple)):
        for o in out:
            if isinstance(o, torch.Tensor):
                yield o


def estimate(build: Callable) -> Estimate | None:
    """Peak bytes of building and running the module once, from a fake run. ``build(mode)``
    builds it under ``mode`` and returns ``(model, args, ...)``. None when the fake run cannot
    complete (an op that needs values, a constructor that raises)."""
    import torch

    meter = _meter_class()()
    try:
        # torch's own warnings about fake tensors (a data pointer read) concern this hidden
        # run, never the user's code
        with warnings.catch_warnings(), meter:
            warnings.simplefilter("ignore")
            model, args = build(meter)[:2]
            with torch.no_grad():
                model(*args)
            inputs64 = sum(a.numel() * 8 for a in args
                           if isinstance(a, torch.Tensor) and a.is_floating_point())
            params64 = sum(p.numel() * 8 for p in model.parameters())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - the real run says what went wrong
        return None
    rows = _gradient_rows(args)
    # A float64 copy of the parameters, every activation kept for the backward pass, and the
    # backward itself, batched over the gradient rows (autograd's vmap: each op's gradient
    # for every row at once), with one gradient of the inputs per row.
    behaviour = 2 * params64 + (2 + rows) * meter.made64 + rows * inputs64
    return Estimate(forward=meter.peak, behaviour=behaviour)


def _gradient_rows(args) -> int:
    """The behaviour checks' backward rows: one per sample and one per time step (B + T)."""
    import torch

    shapes = [a.shape for a in args if isinstance(a, torch.Tensor) and a.dim() >= 2]
    return max((s[0] + s[1] for s in shapes), default=1)


def needs(n: int) -> int:
    return int(n * SAFETY) + HEADROOM


def ensure_fits(build: Callable, dims: Mapping[str, int], init: Mapping[str, object] | None = None,
                *, behaviour: bool = True) -> str | None:
    """Raise :class:`TooLarge` when one forward at these sizes would not fit in memory; return
    a note when only the behaviour checks would not (the caller skips them), else None.
    ``build(mode)`` builds the module and its inputs under ``mode`` (see :func:`estimate`)."""
    memory = available_memory()
    if memory is None or not worth_estimating(dims, init, memory, behaviour=behaviour):
        return None
    found = estimate(build)
    if found is None:
        return None
    if needs(found.forward) > memory.bytes:
        raise TooLarge(f"at {sizes_shown(dims)} one forward pass needs about "
                       f"{gigabytes(needs(found.forward))}; {memory.describe()}. "
                       f"Use smaller sizes.")
    if behaviour and needs(found.behaviour) > memory.bytes:
        return (f"{_BEHAVIOUR} not checked: at {sizes_shown(dims)} they need about "
                f"{gigabytes(needs(found.behaviour))} (a float64 copy with gradients); "
                f"{memory.describe()}. Use smaller sizes to check them.")
    return None


def behaviour_out_of_memory(dims: Mapping[str, int]) -> str:
    """The note for behaviour checks that ran out of memory although the estimate allowed them."""
    return f"{_BEHAVIOUR} not checked: at {sizes_shown(dims)} they ran out of memory. Use " \
           f"smaller sizes to check them."


def sizes_shown(dims: Mapping[str, int]) -> str:
    """The sizes the user chose that are larger than their defaults, ``B=64, T=4096``; else
    every size larger than its default, else all of them."""
    explicit = getattr(dims, "explicit", None) or dims.keys()
    for names in (explicit, dims.keys()):
        large = [f"{k}={dims[k]}" for k in dims if k in names
                 and dims[k] > DEFAULT_SIZES.get(k, _DEFAULT_OTHER)]
        if large:
            return ", ".join(large)
    return ", ".join(f"{k}={v}" for k, v in dims.items())


# --- an allocation that fails anyway ------------------------------------------------------------

def out_of_memory(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or the exception it was raised from) is a failed allocation: torch's
    ``OutOfMemoryError``, the CPU allocator's "can't allocate memory", a size whose byte count
    overflows, Python's ``MemoryError``."""
    import torch

    seen = 0
    while exc is not None and seen < 4:
        if isinstance(exc, (MemoryError, getattr(torch, "OutOfMemoryError", MemoryError))):
            return True
        if isinstance(exc, RuntimeError) and _OOM.search(str(exc)):
            return True
        exc, seen = exc.__cause__, seen + 1
    return False


def allocation_failed(exc: BaseException, dims: Mapping[str, int], where: str = "") -> TooLarge:
    """One line for an allocation that failed in the real run: the sizes, how much was asked."""
    asked = _TRIED.search(str(exc)) or (exc.__cause__ and _TRIED.search(str(exc.__cause__)))
    what = f" (one tensor of {gigabytes(int(asked.group(1)))})" if asked else ""
    memory = available_memory()
    free = f"; {memory.describe()}" if memory is not None else ""
    return TooLarge(f"at {sizes_shown(dims)} the run ran out of memory{where}{what}{free}. "
                    f"Use smaller sizes.")
