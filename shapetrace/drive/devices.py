"""Code written for a GPU, checked on a machine without one.

A constructor or forward that calls ``.cuda()`` (a KV cache made on the GPU, a mask moved there)
raises "Torch not compiled with CUDA enabled" on a CPU-only machine, before any op of the user's
can be checked. Where CUDA is missing, :func:`cpu_only` makes ``Tensor.cuda()`` and
``Module.cuda()`` leave their tensor or module where it is, makes tensors asked for on
``device="cuda"`` (``torch.zeros(shape, device="cuda")``, ``.to("cuda")``) on the CPU, and
remembers the user's lines that did so, for a note. Where CUDA is present nothing changes.
"""

from __future__ import annotations

import contextlib
import sys
import types
import weakref

import torch
from torch.overrides import TorchFunctionMode

from ..base.errors import TargetError
from ..base.source import display_path, outer_user_frame

#: the lines whose ``.cuda()`` calls were left on the CPU, per model
_SKIPPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def cpu_only(sites: list[tuple[str, int]]):
    """``.cuda()`` a no-op while inside, each user line that called it added to ``sites``;
    nothing changes where CUDA is available."""
    if torch.cuda.is_available():
        yield
        return
    tensor_cuda, module_cuda = torch.Tensor.cuda, torch.nn.Module.cuda

    def stay(self, *args, **kwargs):
        site = outer_user_frame(sys._getframe(1), installed_is_library=False)
        if site is not None and site not in sites:
            sites.append(site)
        return self

    torch.Tensor.cuda, torch.nn.Module.cuda = stay, stay
    try:
        with _OnTheCpu(sites):
            yield
    finally:
        torch.Tensor.cuda, torch.nn.Module.cuda = tensor_cuda, module_cuda


def _cuda(value) -> bool:
    return isinstance(value, str) and value.startswith("cuda") \
        or isinstance(value, torch.device) and value.type == "cuda"


class _OnTheCpu(TorchFunctionMode):
    """``device="cuda"`` handed to a tensor's factory (``torch.zeros(shape, device="cuda")`` in
    a cache written for a GPU) and ``.to("cuda")`` made on the CPU, the user's line kept for the
    note. Entered before any recorder, so that it sits below it."""

    def __init__(self, sites: list):
        super().__init__()
        self.sites = sites

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        moved = False
        if _cuda(kwargs.get("device")):
            kwargs, moved = {**kwargs, "device": "cpu"}, True
        if func is torch.Tensor.to and any(_cuda(a) for a in args[1:]):
            args, moved = tuple("cpu" if _cuda(a) else a for a in args), True
        if moved:
            site = outer_user_frame(sys._getframe(1), installed_is_library=False)
            if site is not None and site not in self.sites:
                self.sites.append(site)
        return func(*args, **kwargs)


def remember(model, sites: list[tuple[str, int]]) -> None:
    """Keep ``sites`` (from building ``model``) for :func:`note`."""
    if sites:
        try:
            kept = _SKIPPED.setdefault(model, [])
        except TypeError:  # a model that cannot be weakly referenced
            return
        kept.extend(s for s in sites if s not in kept)


def note(model, sites: list[tuple[str, int]] = ()) -> str:
    """The note for the ``.cuda()`` calls left on the CPU while building and running ``model``,
    or ""."""
    try:
        found = list(_SKIPPED.get(model, ()))
    except TypeError:
        found = []
    found += [s for s in sites if s not in found]
    if not found:
        return ""
    lines = ", ".join(f"{display_path(f)}:{n}" for f, n in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (f"run on the CPU: no CUDA on this machine, so .cuda() (or device=\"cuda\") at "
            f"{lines}{more} left its tensor where it was")




@contextlib.contextmanager
def on_meta():
    """torch's meta device while inside (a module built there allocates nothing). A cache of
    the user's code (``functools.cache``, ``lru_cache``) that gained entries inside is cleared
    on the way out: a table computed on meta and cached would otherwise be handed to the real
    build, whose forward then meets a tensor with no values."""
    before = _user_caches()
    try:
        with torch.device("meta"):
            yield
    finally:
        for wrapper, size in before:  # the modules are scanned once, before
            if wrapper.cache_info().misses > size:  # computed inside (a full cache of one
                wrapper.cache_clear()                 # entry replaces it: its size stays)


#: the most parameters a module built at sizes shapetrace chose may have: the checks copy it in
#: float64 and run it several times, on the CPU
MAX_PARAMETERS = 100_000_000


#: parameters counted on the meta device, by class and arguments: a module built again and
#: again with the same arguments (its readings, a parent's) is counted once
_COUNTED: dict = {}


def parameters_on_meta(cls, init) -> int | None:
    """How many parameters ``cls(**init)`` has, counted on the meta device, where nothing is
    allocated; None when the constructor cannot run there (the real build says why)."""
    import warnings

    try:
        key = (cls, tuple((name, repr(value)) for name, value in init.items()))
        hash(key)
    except Exception:  # noqa: BLE001 - arguments with no stable spelling: counted each time
        key = None
    if key is not None and key in _COUNTED:
        return _COUNTED[key]
    try:
        with on_meta(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            count = sum(p.numel() for p in cls(**init).parameters())
    except Exception:  # noqa: BLE001 - the real construction says what is wrong, if anything
        count = None
    if key is not None:
        if len(_COUNTED) > 256:
            _COUNTED.clear()
        _COUNTED[key] = count
    return count


@contextlib.contextmanager
def parameter_budget(what: str, limit: int = MAX_PARAMETERS):
    """While inside, a constructor that registers more than ``limit`` parameters in all is
    stopped as it goes (a :class:`TargetError` naming ``what``), before it allocates the rest:
    the guard for a module whose size the meta device could not count (its constructor puts
    tensors on the CPU by name)."""
    import torch.nn as nn

    original = nn.Module.register_parameter
    # each distinct parameter counted once while a module holds it: one assigned again under
    # the same name replaces the last, one tied under two names (an embedding and the head
    # that shares it) counts once
    slots: dict[tuple[int, str], int] = {}  # (id(module), name) -> id(parameter)
    held: dict[int, list] = {}  # id(parameter) -> [its size, the slots holding it]
    total = [0]

    def register(module, name, param):
        key = (id(module), name)
        before = slots.pop(key, None)
        if before is not None and before in held:
            held[before][1] -= 1
            if not held[before][1]:
                total[0] -= held.pop(before)[0]
        if param is not None and not isinstance(param, nn.parameter.UninitializedParameter):
            entry = held.setdefault(id(param), [param.numel(), 0])  # (a lazy layer's: no size)
            if not entry[1]:
                total[0] += entry[0]
            entry[1] += 1
            slots[key] = id(param)
            if total[0] > limit:
                raise TargetError(f"{what} would have more than {limit / 1e6:.0f}M parameters at "
                                  f"the sizes shapetrace chose, too many to check here; give "
                                  f"smaller sizes with --init (or --dims)")
        return original(module, name, param)

    nn.Module.register_parameter = register
    try:
        yield
    finally:
        nn.Module.register_parameter = original


#: top-level packages whose caches a build of the user's module cannot fill with its tensors
_NOT_USERS = frozenset({"torch", "shapetrace", "numpy", "jaxtyping", "beartype", "rich",
                        "pytest", "_pytest"}) | frozenset(sys.stdlib_module_names)


def _user_caches() -> list[tuple[object, int]]:
    """``(wrapper, misses)`` for the cached functions at the top level of the loaded
    modules outside torch, shapetrace and the standard library, also one a decorator of the
    user's own wraps (held in its closure)."""
    import functools

    found = {}
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in _NOT_USERS:
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if not callable(value) or isinstance(value, type):
                continue
            cells = (value.__closure__ or ()) if isinstance(value, types.FunctionType) else ()
            wrapped = getattr(value, "__wrapped__", None) if isinstance(value, types.FunctionType) else None
            for one in (value, wrapped, *(_content(cell) for cell in cells)):
                if isinstance(one, functools._lru_cache_wrapper):
                    found[id(one)] = (one, one.cache_info().misses)  # once, however imported
    return list(found.values())


def _content(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None


#: what torch says when code asks for a GPU on a machine without one
_NO_GPU = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available",
           "Found no NVIDIA driver", "CUDA driver initialization failed")


def needs_gpu(raised: BaseException | None) -> bool:
    """Whether ``raised`` says the code asked for a GPU this machine does not have (a CUDA
    stream, a device property, a kernel launched on the GPU), not that the code is wrong."""
    return raised is not None and not torch.cuda.is_available() and any(
        text in str(raised) for text in _NO_GPU)
