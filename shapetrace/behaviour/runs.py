"""Runs of the probe: float64 copies of the module and its inputs, seeds, one thread, the
math kernel of SDPA, and the outputs read back (flattened, compared, measured).

Shared by the checks (``checks``, ``shuffle``, ``locate``) and by the reference comparison,
which runs both modules the same way."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping
from contextlib import contextmanager

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode


def float64_copy(value):
    """A float64 copy of a floating tensor (never the caller's storage); other values as they are."""
    if isinstance(value, Tensor):
        value = value.detach()
        return value.to(torch.float64, copy=True) if value.is_floating_point() else value.clone()
    return value



def fresh(values):
    """Copies of the tensors in a list or dict of arguments, for one run."""
    if isinstance(values, Mapping):
        return {k: v.clone() if isinstance(v, Tensor) else v for k, v in values.items()}
    return [v.clone() if isinstance(v, Tensor) else v for v in values]



#: values a module may hold that ``copy.deepcopy`` refuses and that no run changes: kept as
#: they are in the copy (``self.rotate = staticmethod(rotate)``)
_SHARED = (staticmethod, classmethod)


def copy_module(module: nn.Module) -> nn.Module:
    """A deep copy of the caller's module; raises what copying it raises. Functions wrapped
    as ``staticmethod`` or ``classmethod`` and held as attributes are shared, not copied."""
    dispatch = copy._deepcopy_dispatch  # type: ignore[attr-defined]
    added = [kind for kind in _SHARED if kind not in dispatch]
    for kind in added:
        dispatch[kind] = _same
    try:
        return copy.deepcopy(module)
    finally:
        for kind in added:
            dispatch.pop(kind, None)


def _same(value, memo):
    return value



def to_float64(model: nn.Module) -> nn.Module:
    """``model`` (a copy) in float64, eval mode, without gradients for its parameters; complex
    buffers and parameters (a rotary table kept as ``polar(1, angles)``, a spectral block's
    ``cfloat`` weights) in complex128, where ``Module.to`` would drop their imaginary parts."""
    complex_buffers = [(sub, key, value) for sub in model.modules()
                       for key, value in sub._buffers.items()
                       if value is not None and value.is_complex()]
    complex_params = [(param, param.data) for param in model.parameters() if param.is_complex()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cast of the complex values, undone below
        model.to(torch.float64)
    for sub, key, value in complex_buffers:
        sub._buffers[key] = value.to(torch.complex128)
    for param, value in complex_params:
        param.data = value.to(torch.complex128)
    for sub in model.modules():  # plain tensor attributes (not buffers) follow the dtype too
        for key, value in list(vars(sub).items()):
            plain = isinstance(value, Tensor) and type(value) is not nn.Parameter
            if plain and value.is_floating_point():
                setattr(sub, key, value.to(torch.float64))
            elif plain and value.is_complex():
                setattr(sub, key, value.to(torch.complex128))
    model.requires_grad_(False)
    return model.eval()



def seed(value: int) -> None:
    """``torch.manual_seed(value)`` for the devices in use: the CPU's generator, and CUDA's once
    it is initialised. ``torch.manual_seed`` itself also queues a seeding for every device not
    initialised yet (CUDA, XPU, MTIA), each with a formatted stack: 0.5 ms deep in a test run,
    paid for every module graded."""
    torch.default_generator.manual_seed(value)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(value)



@contextmanager
def one_thread():
    """Probe-size tensors are tiny: intra-op threads only add overhead (and stall badly when
    the cores are busy), so the checks run on one thread and restore the setting after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _NoHook:
    """The handle of a gradient hook that was never registered: removing it does nothing."""

    def remove(self) -> None:
        pass


@contextmanager
def gradient_hooks_accepted():
    """While entered, a forward that keeps a gradient for later (``attn.register_hook(save)``,
    ``x.retain_grad()``: a relevance map, a saliency method) runs under the checks' own
    ``torch.no_grad()``: on a tensor that cannot take a gradient because autograd is off, the
    hook is accepted and never called. Training runs with autograd on, where the code is right;
    the error torch raises here would be the check's doing, not the module's."""
    register, retain = Tensor.register_hook, Tensor.retain_grad

    def register_hook(self, hook):
        if not self.requires_grad and not torch.is_grad_enabled():
            return _NoHook()
        return register(self, hook)

    def retain_grad(self):
        if not self.requires_grad and not torch.is_grad_enabled():
            return None
        return retain(self)

    Tensor.register_hook, Tensor.retain_grad = register_hook, retain_grad
    try:
        yield
    finally:
        Tensor.register_hook, Tensor.retain_grad = register, retain


@contextmanager
def plain_checkpoints():
    """While entered, an activation checkpoint of the reentrant kind
    (``torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=True)``, the older default) runs
    ``fn`` as a plain call: it computes the same values, and the checks' own gradients
    (``torch.autograd.grad``), which that kind refuses, reach through it. Checkpointing trades
    memory for time in training; a check at probe sizes needs neither."""
    from torch.utils import checkpoint

    function_class = checkpoint.CheckpointFunction
    kept = function_class.__dict__.get("apply")  # torch's own is inherited from Function

    def apply(cls, function, preserve_rng_state, *args):
        return function(*args)

    function_class.apply = classmethod(apply)
    try:
        yield
    finally:
        if kept is None:
            del function_class.apply
        else:
            function_class.apply = kept


@contextmanager
def float64_default():
    """Tensors the module makes without a dtype (``torch.zeros(T, T)``,
    ``nn.Transformer.generate_square_subsequent_mask(T)``) are float64 like the probe's copy, as
    they match the module's dtype in an ordinary run: a float32 mask added to float64 scores
    would make the re-run fail. So are those it asks for in float32 by name (``t.float()``,
    ``torch.arange(n, dtype=torch.float32)``, ``x.to(torch.float32)``: a timestep embedding
    made in float32 by hand), which in an ordinary run match a float32 module too."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with _Float64Casts():
            yield
    finally:
        torch.set_default_dtype(before)


#: dtypes asked for by name, and what the float64 re-runs give instead
_WIDER = {torch.float32: torch.float64, torch.complex64: torch.complex128}


class _Float64Casts(TorchFunctionMode):
    """float32 (and complex64) asked for by name, given as float64 (complex128); a
    reinterpreting ``view(dtype)`` left as it is."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.float:
            return args[0].to(torch.float64)
        if getattr(func, "__name__", "") != "view":
            if any(a is torch.float32 or a is torch.complex64 for a in args):
                args = tuple(_WIDER.get(a, a) if isinstance(a, torch.dtype) else a for a in args)
            if kwargs.get("dtype") in _WIDER:
                kwargs = {**kwargs, "dtype": _WIDER[kwargs["dtype"]]}
        return func(*args, **kwargs)



@contextmanager
def math_sdpa():
    """The math SDPA kernel: differentiable under vmap, and masked weights are exactly 0."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # pragma: no cover - older torch
        yield
        return
    with sdpa_kernel([SDPBackend.MATH]):
        yield



def flatten(out, label: str = "output", path: tuple = (), depth: int = 0):
    """(label, path, tensor) for every tensor in a tensor / tuple / dict / ModelOutput."""
    if isinstance(out, Tensor):
        yield label, path, out
        return
    if depth >= 3:
        return
    if isinstance(out, (tuple, list)):
        for i, item in enumerate(out):
            yield from flatten(item, f"{label}[{i}]", path + (i,), depth + 1)
    elif isinstance(out, Mapping) or _dict_like(out):
        try:  # dicts and Hugging Face ModelOutput; a cache object is not a container of outputs
            items = [(key, out[key]) for key in out.keys()]
        except Exception:  # noqa: BLE001
            return
        for key, item in items:
            yield from flatten(item, str(key), path + (key,), depth + 1)



def _dict_like(out) -> bool:
    return callable(getattr(out, "keys", None)) and hasattr(out, "__getitem__")



def get(out, path: tuple):
    for key in path:
        out = out[key]
    return out



def same(a: Tensor, b: Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_meta or b.is_meta:
        return a.is_meta == b.is_meta  # shapes only (a module built without values): no value differs
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a, b) or ((a == b) | (a.isnan() & b.isnan())).all())
    return bool(torch.equal(a, b))



def nudge_weights(model, gen: torch.Generator, size: float = 0.1) -> None:
    """Every floating parameter of ``model`` changed a little in place (by ``size`` times its
    mean magnitude, seeded): a layer initialised to zero by design (a gate, an output layer, a
    LoRA's second matrix) hides nothing then. The caller puts them back."""
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and p.numel():
                scale = float(p.abs().mean()) or 1.0
                p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * size * scale)


def relative_change(got: Tensor, want: Tensor) -> float:
    if got.shape != want.shape:
        return math.inf
    if not got.is_floating_point():
        return 0.0 if torch.equal(got, want) else math.inf
    finite = got.isfinite() & want.isfinite()
    scale = float(want[finite].abs().max()) if finite.any() else 0.0
    diff = float((got - want)[finite].abs().max()) if finite.any() else 0.0
    if (got.isfinite() != want.isfinite()).any():
        return math.inf
    return diff / scale if scale > 0 else diff



def max_change(a, b) -> float:
    worst = 0.0
    for (_, _, ta), (_, _, tb) in zip(flatten(a), flatten(b)):
        if ta.is_floating_point() and ta.shape == tb.shape and not same(ta, tb):
            finite = ta.isfinite() & tb.isfinite()
            worst = max(worst, float((ta - tb)[finite].abs().max()) if finite.any() else math.inf)
    return worst



def outputs_equal(a, b) -> bool:
    """Whether two runs' outputs agree: exactly, or as far as rounding can tell (the same sums
    taken in another order: a random draw that changed nothing but the order, 1e-16 apart in
    float64)."""
    fa, fb = list(flatten(a)), list(flatten(b))
    return len(fa) == len(fb) and all(same(x, y) or _rounded(x, y)
                                      for (_, _, x), (_, _, y) in zip(fa, fb))


def _rounded(a: Tensor, b: Tensor) -> bool:
    """Whether two floating tensors of one shape differ by no more than rounding: 64 units in
    the last place of their largest value (:func:`relative_change`)."""
    return a.dtype == b.dtype and a.is_floating_point() \
        and relative_change(a, b) <= 64 * torch.finfo(a.dtype).eps
