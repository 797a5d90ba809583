"""Everything shapetrace knows about torch's private internals, in one place.

A new torch release that moves one of these breaks this file, loudly (``tests/test_compat.py``
holds one test per assumption), and nothing else. Each helper looks its target up when called,
not at import, so a user who patches ``F.softmax`` after importing shapetrace sees the patch
honoured, and importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import sys
import types

#: Private modules whose functions are public ones under another name: ``torch._C._nn.gelu`` is
#: ``F.gelu``; ``torch._C._fft.fft_fft`` is ``torch.fft.fft``.
NN_MODULE = "torch._C._nn"
PRIVATE_PREFIX = "torch._C._"


def public_namespace(module: str) -> str | None:
    """``"torch._C._fft"`` -> ``"fft"``: the public submodule a private one stands for."""
    if module.startswith(PRIVATE_PREFIX) and module != NN_MODULE:
        return module[len(PRIVATE_PREFIX):]
    return None


def quiet_numpy_warning() -> None:
    """Ignore the warning torch prints when imported without NumPy installed ("Failed to
    initialize NumPy"): shapetrace never needs NumPy, and the command line should not greet a
    fresh install with a warning. For the ``shapetrace`` command's own process only."""
    import warnings

    warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)


def disable_torch_function():
    """A context in which tensor ops skip every ``__torch_function__`` mode (the tracer's value
    probes run their own reductions in it, so that no enclosing trace records them)."""
    import torch

    return torch._C.DisableTorchFunction()


def mode_on_top(mode) -> bool:
    """Whether ``mode`` is the innermost torch-function mode of this thread: only then can a
    trace take its mode off the stack (and put it back) without disturbing a mode the user
    entered inside the trace."""
    import torch

    depth = torch._C._len_torch_function_stack()
    return depth > 0 and torch._C._get_function_stack_at(depth - 1) is mode


def push_mode(mode) -> None:
    """Puts ``mode`` back on this thread's torch-function mode stack (``TorchFunctionMode``'s
    own ``__enter__``, without the context-manager bookkeeping)."""
    import torch

    torch._C._push_on_torch_function_stack(mode)


def pop_mode() -> None:
    """Takes the innermost torch-function mode off this thread's stack (``mode_on_top`` says
    which it is)."""
    import torch

    torch._C._pop_torch_function_stack()


def is_compiling() -> bool:
    """Whether the caller runs inside a ``torch.compile`` region being traced (dynamo): the
    value probes stay out of it, since a probe's ``.item()`` would break the user's graph."""
    import torch

    compiler = getattr(torch, "compiler", None)
    check = getattr(compiler, "is_compiling", None)
    return bool(check()) if check is not None else False


def compiling_check():
    """:func:`is_compiling` for a caller that asks on every op: torch's own function, looked up
    once (a function saying False on a torch without one)."""
    import torch

    check = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return check if check is not None else _never


def version_of(t) -> int | None:
    """The count of in-place writes to ``t``'s data that autograd keeps (private ``_version``,
    shared by a tensor and its views): unchanged means nothing wrote to it since. None for a
    tensor without one (made under ``torch.inference_mode``)."""
    try:
        return t._version
    except Exception:  # "Inference tensors do not track version counter"; a subclass's own
        return None


def tracing_check():
    """``torch.jit.is_tracing`` for a caller that asks on every module call: torch's own check
    (private ``torch._C._is_tracing``), without the Python function around it."""
    import torch

    check = getattr(torch._C, "_is_tracing", None)
    return check if check is not None else torch.jit.is_tracing


def _never() -> bool:
    return False


class quietly:
    """``with disable_torch_function(), torch.no_grad():`` at a fraction of its cost, for code
    that runs once per training step: tensor ops skip every ``__torch_function__`` mode and
    autograd records nothing."""

    __slots__ = ("_grad", "_off")

    def __enter__(self) -> None:
        import torch

        self._grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        self._off = torch._C.DisableTorchFunction()
        self._off.__enter__()

    def __exit__(self, *exc_info) -> bool:
        import torch

        self._off.__exit__(*exc_info)
        torch._C._set_grad_enabled(self._grad)
        return False


def torch_function_disabler():
    """The class :func:`disable_torch_function` instantiates, for a caller on the hot path."""
    import torch

    return torch._C.DisableTorchFunction


def eager_stance():
    """While entered, ``torch.compile`` directives are ignored (``set_stance("force_eager")``):
    a forward the user's code decorated with ``@torch.compile()`` runs as the Python it is, so
    the tracer sees its ops and every run of a check computes the same way (a compiled run and
    an eager fallback after the recompile limit would differ by rounding). A no-op where no
    code has used torch.compile yet (``torch._dynamo`` not imported: importing it costs about a
    second) and on a torch without ``set_stance``."""
    import contextlib
    import sys

    import torch

    if "torch._dynamo" not in sys.modules or not hasattr(torch.compiler, "set_stance"):
        return contextlib.nullcontext()
    return torch.compiler.set_stance("force_eager")


def eager_module(model):
    """The eager module behind a ``torch.compile``'d one (``OptimizedModule._orig_mod``), or
    None for anything else."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return None
    # a submodule of the wrapper, in its private table: read there without the AttributeError
    # that a plain module's __getattr__ raises (and catches) for a name it does not hold
    inner = model._modules.get("_orig_mod")
    return inner if isinstance(inner, torch.nn.Module) else None


#: what ``OptimizedModule.__call__`` warns when any global module hook is set: shapetrace's own
#: hooks (a trace's module names) set one, so the warning is about shapetrace, not the user
_GLOBAL_HOOK_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks"


@contextlib.contextmanager
def compiler_off():
    """Compiled code runs eagerly inside the block (dynamo's ``disable`` flag), so a trace sees
    every op and dynamo never traces shapetrace's own hooks, and torch's warning about global
    hooks (shapetrace's) on a compiled module is not shown; both put back afterwards. Nothing is
    imported when dynamo is not loaded: then nothing compiled has run yet."""
    import warnings

    dynamo = sys.modules.get("torch._dynamo")
    config = getattr(dynamo, "config", None)
    if config is None or not hasattr(config, "disable"):
        yield
        return
    before = config.disable
    config.disable = True
    warnings.filterwarnings("ignore", message=_GLOBAL_HOOK_WARNING, category=UserWarning)
    ours = warnings.filters[0]
    try:
        yield
    finally:
        config.disable = before
        if ours in warnings.filters:  # only our filter: the user's own changes stay
            warnings.filters.remove(ours)
            getattr(warnings, "_filters_mutated", lambda: None)()


def is_fake(t) -> bool:
    """Whether ``t`` is a FakeTensor (shapes and dtypes only, no values)."""
    return type(t).__name__ == "FakeTensor"


def fake_constant(t):
    """The real tensor a fake one was made from (``torch.tensor(13.)``), or None."""
    return getattr(t, "constant", None)


def fake_tensor_api():
    """``(FakeTensorMode, DataDependentOutputException, DynamicOutputShapeException,
    UnsupportedOperatorException)`` from torch's private fake-tensor module."""
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        FakeTensorMode,
        UnsupportedOperatorException,
    )

    return FakeTensorMode, DataDependentOutputException, DynamicOutputShapeException, \
        UnsupportedOperatorException


def _no_torch_function(*args, **kwargs) -> bool:
    return False


def transparent_bodies() -> dict:
    """``{function: body}`` for the torch functions whose Python body is made of ops a student
    would write: run with the tracer on, ``nn.MultiheadAttention`` shows its F.linear / view /
    bmm / softmax rather than one opaque call. The body is the function's own code with torch's
    ``has_torch_function`` checks answered "no" (they would hand the whole call to the mode
    again). Its globals are the function's own, brought up to date each time it runs
    (:func:`current_body`): a patch of ``F.softmax`` made before the trace or inside it is
    honoured inside the body."""
    import torch.nn.functional as F

    out = {}
    func = getattr(F, "multi_head_attention_forward", None)
    if isinstance(func, types.FunctionType):
        known = _BODIES.get(func)
        if known is not None:  # made for an earlier trace: its globals are refreshed as it runs
            out[func] = known
            return out
        g = {**func.__globals__, **_ANSWERED_NO}
        body = types.FunctionType(func.__code__, g, func.__name__, func.__defaults__,
                                  func.__closure__)
        body.__kwdefaults__ = func.__kwdefaults__
        body.__shapetrace_globals__ = func.__globals__
        out[func] = _BODIES[func] = body
    return out


# function -> its transparent body, made once (a patched function is another key)
_BODIES: dict = {}


_ANSWERED_NO = {"has_torch_function": _no_torch_function,
                "has_torch_function_unary": _no_torch_function,
                "has_torch_function_variadic": _no_torch_function}


def current_body(body):
    """A body of :func:`transparent_bodies` with its globals as its function's are now (a patch
    made since honoured), its ``has_torch_function`` checks still answered "no"."""
    g = body.__globals__
    g.update(body.__shapetrace_globals__)
    g.update(_ANSWERED_NO)
    return body


def dispatching_caller(frame):
    """The frame of the Python torch function whose call torch handed to a torch-function mode
    (its ``handle_torch_function``), given the frame that called the mode's
    ``__torch_function__``; None for a call that came from C."""
    global _DISPATCH_CODE
    if _DISPATCH_CODE is None:
        from torch.overrides import handle_torch_function

        _DISPATCH_CODE = handle_torch_function.__code__
    if frame is None or frame.f_code is not _DISPATCH_CODE:
        return None
    return frame.f_back


_DISPATCH_CODE = None


def caller_frame(depth: int):
    """The frame ``depth`` levels up from the function that calls this one (0: that function)."""
    return sys._getframe(depth + 1)


def frame_getter():
    """``sys._getframe`` itself, for a hot path that cannot afford the call of
    :func:`caller_frame` (``frame_getter()(1)`` is the caller of the function that calls it)."""
    return sys._getframe


def instruction_position(code, lasti: int) -> tuple[int | None, int | None, int | None, int | None]:
    """``(line, end_line, col, end_col)`` of the instruction at byte offset ``lasti`` in
    ``code`` (CPython's code units are two bytes)."""
    positions = list(code.co_positions())
    index = lasti // 2
    if 0 <= index < len(positions):
        return positions[index]
    return None, None, None, None


def module_tables(module) -> tuple[dict, dict, dict]:
    """The private tables ``module`` keeps its parameters, buffers and submodules in
    (``_parameters``, ``_buffers``, ``_modules``): the only place to read a slot that holds
    None, and to put back an entry a run replaced, removed or added."""
    return module._parameters, module._buffers, module._modules


def all_modules(model) -> list:
    """``model`` and every submodule, each once, in the order of ``model.modules()``
    (pre-order): read from the private ``_modules`` dicts, as :func:`module_tensors` does
    (``model.modules()`` runs a generator per module)."""
    found: list = []
    seen: set[int] = set()
    stack = [model]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        found.append(module)
        stack += [m for m in reversed(module._modules.values()) if m is not None]
    return found


def module_paths(model, prefix: str) -> dict[int, str]:
    """``id(module) -> path`` for ``model`` (``prefix``) and every submodule (``prefix.blocks.0``),
    as ``named_modules(prefix=...)`` names them (pre-order; a shared module keeps its first
    path), read from the private ``_modules`` dicts."""
    return module_tree(model, prefix)[0]


def module_tree(model, prefix: str) -> tuple[dict[int, str], list]:
    """:func:`module_paths` and :func:`all_modules` of ``model`` from one walk."""
    paths: dict[int, str] = {}
    modules: list = []
    stack = [(model, prefix)]
    while stack:
        module, path = stack.pop()
        if id(module) in paths:
            continue
        paths[id(module)] = path
        modules.append(module)
        stack += [(child, f"{path}.{name}" if path else name)
                  for name, child in reversed(module._modules.items()) if child is not None]
    return paths, modules


def held_tensors(module) -> list:
    """``(name, tensor)`` for each tensor ``module`` itself holds that is no parameter: its
    buffers, and tensors kept as plain attributes (``self.mask = torch.triu(...)``, which
    ``register_buffer`` was not asked to keep)."""
    import torch

    held = [(k, t) for k, t in module._buffers.items() if t is not None]
    held += [(k, v) for k, v in vars(module).items()
             if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter)]
    return held


def module_tensors(model, modules: list | None = None) -> list:
    """Every parameter and buffer of ``model`` and its submodules (``modules``, when the caller
    already has them from :func:`all_modules`), each module visited once, in no particular
    order. Read from the private ``_modules`` / ``_parameters`` / ``_buffers`` dicts:
    ``model.parameters()`` runs a few nested generators per module, which shows on every trace
    of a small model."""
    found: list = []
    for module in all_modules(model) if modules is None else modules:
        found += [t for t in module._parameters.values() if t is not None]
        found += [t for t in module._buffers.values() if t is not None]
    return found


def own_hook_count(module) -> int:
    """Forward hooks and pre-hooks registered on ``module`` itself (the private
    ``_forward_hooks`` / ``_forward_pre_hooks`` tables that torch's fast-path check counts)."""
    return len(module._forward_hooks) + len(module._forward_pre_hooks)


def same_qkv_width(attn) -> bool:
    """Whether an ``nn.MultiheadAttention`` projects q, k and v from one width (private
    ``_qkv_same_embed_dim``: one packed ``in_proj_weight``)."""
    return bool(attn._qkv_same_embed_dim)


def dropout_base_class():
    """The class every ``nn.Dropout*`` module derives from (private: ``_DropoutNd``); its ``p``
    is the rate."""
    from torch.nn.modules.dropout import _DropoutNd

    return _DropoutNd


#: Loaded by torch the first time autograd runs a vmap-batched backward (sympy and the
#: symbolic-shape machinery, about 0.4 s); once it is, a batched backward costs nothing extra.
BATCHED_GRAD_MODULE = "torch.fx.experimental.symbolic_shapes"


def batched_grad_loaded() -> bool:
    """Whether autograd's batched backward (``is_grads_batched=True``) is already set up in
    this process, so that using it adds no import cost."""
    return BATCHED_GRAD_MODULE in sys.modules


def script_function_class() -> type:
    """``torch.jit.ScriptFunction``, for a caller that looks at many objects: only its instances
    have a :func:`script_original`."""
    import torch

    return torch.jit.ScriptFunction


def script_original(obj):
    """The Python function a ``torch.jit.script`` function was compiled from, or None for
    anything else. torch keeps it on the ScriptFunction as ``_torchdynamo_inline`` (so that
    ``torch.compile`` can trace the Python instead of the compiled graph)."""
    import torch

    if not isinstance(obj, torch.jit.ScriptFunction):
        return None
    original = getattr(obj, "_torchdynamo_inline", None)
    return original if isinstance(original, types.FunctionType) else None


def absent_gpu(value) -> bool:
    """Whether ``value`` names a GPU device (``"cuda:0"``, ``torch.device("cuda")``) that this
    machine lacks."""
    import torch

    if isinstance(value, torch.device):
        value = value.type
    return isinstance(value, str) and value.split(":")[0] in ("cuda", "mps") \
        and not (torch.cuda.is_available() if value.startswith("cuda")
                 else torch.backends.mps.is_available())
