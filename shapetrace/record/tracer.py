"""Recording: every tensor op inside a block, with its source line and module path.

A ``TorchFunctionMode`` sees each op at the level a student writes it (``F.linear``,
``Tensor.view``, ``@``), and global module hooks say which module ran it. The recorder only
records: it appends ``OpRecord`` s to a ``TraceData`` (``base.records``) and calls the value
probes (``record.probes``) where an op needs them. Naming, rules, rendering: later, not here.

Only the thread that entered the trace is recorded: torch-function modes are per thread, and the
module hooks and the warning hook, which are global, ignore other threads.
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from ..base.compat import (current_body, dispatching_caller, frame_getter, is_fake, mode_on_top,
                           module_tree, pop_mode, push_mode, tracing_check, transparent_bodies)
from ..base.records import _EMPTY as _EMPTY_KWARGS
from ..base.records import (
    _TENSOR_ARGS,
    OpRecord,
    ReadOnlyDict,
    TensorMeta,
    TraceData,
    tensor_arg,
)
from ..base.source import is_own_file, module_call_site, site_from
from .kinds import (
    DESCRIBED,
    EMPTY_MEMORY,
    FROM_C,
    LOOKS,
    MULTIPLIES,
    PASSES,
    REBOUND,
    RISKY,
    SELECTS,
    SOFTMAX,
    describe,
    rebound,
    rebound_call,
)
from .hooks import LOCK, unhook
from .layers import mark_returned, unread_layers
from .probes import HALF, SOFTMAX_DEPTH, ValueProbes, has_value
from .scripted import PythonScripts
from .steps import StepWatch
from .tensors import dead, odd_meta, shared_tables
from .warning_route import WARNINGS as _WARNINGS

Tensor = torch.Tensor
_get_ident = threading.get_ident
_jit_tracing = tracing_check()
# Argument types whose equal values are the same value (unlike 1 == True == 1.0).
_SHAREABLE = frozenset({int, str, type(None), torch.dtype, type(tensor_arg(0)), type(Ellipsis)})
# Argument types that are never a tensor nor hold one (dim=, keepdim=, dtype=, eps=).
_PLAIN = frozenset({int, float, bool, str, type(None), torch.dtype})

#: Called after each recorded op with ``(record, output tensors, args, kwargs)``: lets a caller
#: keep what the recorder does not (the behaviour checks keep copies of the outputs).
Observer = Callable[[OpRecord, tuple, tuple, dict], None]


class Recorder:
    """Records the ops of one thread into ``data`` while entered (once)."""

    def __init__(self, data: TraceData, model: torch.nn.Module | None = None, *,
                 root: str | None = None, probes: bool = True, observer: Observer | None = None,
                 steps: bool = False, spans: list | None = None):
        self.data = data
        self.names: dict[int, str] = {}  # id(module) -> its path
        #: the model and its submodules, walked once with their paths: handed to the trace
        #: (``TraceData.model_modules``) unless a module met while recording was not among them
        self.modules: list | None = None
        self.model = model if isinstance(model, torch.nn.Module) else None
        if self.model is not None:
            self.names, self.modules = module_tree(model, root or type(model).__name__)
        self.probes = ValueProbes(data.records) if probes else None
        self.observer = observer
        self.mode: _Mode | None = None
        self.thread: int | None = None  # the recorded thread; None while paused
        self.owner: int | None = None  # the thread that entered, for the hooks
        self._paused = 0  # module calls deep inside a torch.jit.trace, whose ops are not recorded
        self.module = ""  # the innermost running module's path, or ""
        self._stack: list[tuple[torch.nn.Module, str]] = []
        self._handles: list = []
        #: repeated steps of a training loop counted, not kept (``record.steps``); ``spans``:
        #: the optimizer spans to forget with a dropped step
        self.steps: StepWatch | None = None
        if steps:
            self.steps = StepWatch(self, model if isinstance(model, torch.nn.Module) else None,
                                   spans)
        self.light = False  # the mode is off the stack: a step that is only counted
        #: called with ``(module, args)`` at each recorded module call (the size witness's
        #: annotations), from the recorder's own global hook: off with it between steps
        self.watchers: list = []

    # --- entering and leaving ---------------------------------------------------------------

    def __enter__(self) -> "Recorder":
        if self.mode is not None:
            raise RuntimeError("a shapetrace trace cannot be entered twice")

        self.thread = self.owner = threading.get_ident()
        self.mode = _Mode(self)
        self._hook_modules()
        _WARNINGS.add(self)
        self._scripts = PythonScripts(self.model).__enter__()  # TorchScript helpers as Python
        try:
            self.mode.__enter__()
            if self.steps is not None:
                self.steps.__enter__()
        except BaseException:
            if self.mode is not None and mode_on_top(self.mode):
                pop_mode()
            self._cleanup()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.steps is not None:
                self.steps.__exit__(exc_type, exc, tb)
        finally:
            try:
                if not self.light:
                    self.mode.__exit__(exc_type, exc, tb)
            finally:
                self.light = False
                self._cleanup()
                self._finish()
        return False

    # --- recording on and off between steps (``record.steps``) -------------------------------

    def stop_recording(self) -> bool:
        """Between steps at the outermost module call: takes the mode off the stack and the
        global hooks off the modules, so that what follows runs as if untraced; False (and
        nothing changed) inside another module, or where a mode the user entered sits above."""
        if self.light:
            return True
        mode = self.mode
        if mode is None or mode.current is not None or len(self._stack) > 1 \
                or self._paused or not mode_on_top(mode):
            return False
        pop_mode()
        unhook(self._handles)
        self._stack.clear()
        self.module = ""
        self.light = True
        return True

    def resume_recording(self, running: torch.nn.Module | None = None) -> bool:
        """Puts the mode and the hooks back: the ops that follow are recorded. ``running``: the
        module whose call is starting, its own global pre-hook already passed."""
        if self.light and self.mode is not None:
            push_mode(self.mode)
            self.light = False
            self._hook_modules()
            if running is not None:
                self.module = self._module_name(running)
                self._stack.append((running, self.module))
        return not self.light

    def _hook_modules(self) -> None:
        """The global module hooks: which module runs each op (every module call runs them, so
        they are off between recorded steps)."""
        from torch.nn.modules import module as nn_module

        with LOCK:
            self._handles.append(nn_module.register_module_forward_pre_hook(self._pre_hook))
            self._handles.append(nn_module.register_module_forward_hook(self._post_hook,
                                                                        always_call=True))

    def _cleanup(self) -> None:
        scripts, self._scripts = getattr(self, "_scripts", None), None
        scripts is not None and scripts.__exit__()
        unhook(self._handles)
        _WARNINGS.remove(self)
        self._stack.clear()
        self.module = ""
        if self._paused:
            self._paused = 0
            self.thread = self.owner

    def _finish(self) -> None:
        """Settles each output's liveness and drops everything that points at tensors."""
        mode = self.mode
        if self.model is not None and mode is not None:
            self.data.unread_layers = unread_layers(self.model, self.names, self.data.records,
                                                    mode.live, self.modules)
            self.data.model_modules = self.modules
        self.model = None
        for rec in self.data.records:
            for meta in rec.outputs:
                ref = meta.ref  # a tensor without weak references (dead) may live: unknown
                meta.ref = ref is dead or ref is not None and ref() is not None
            for meta in rec.inputs:
                if meta._made_by is None:
                    meta.ref = None  # a tensor from outside: only outputs say whether they live
        if mode is not None:
            mode.live.clear()
            mode.funcs.clear()
            mode.recorder = None  # no cycle: a dropped trace is freed at once
        if self.probes is not None:
            self.probes.near_softmax.clear()
            self.probes.row_sums.clear()
        self.observer = None
        # The trace holds this recorder: without its data, a dropped trace (every record) is
        # freed by reference counting at once, not by the garbage collector's next pass.
        self.data = None
        self.names.clear()

    # --- module hooks -----------------------------------------------------------------------

    def _module_name(self, module: torch.nn.Module) -> str:
        name = self.names.get(id(module))
        if name is None:
            if self._stack:
                parent, parent_name = self._stack[-1]
                for child_name, child in parent.named_children():
                    self.names.setdefault(id(child), f"{parent_name}.{child_name}")
                name = self.names.get(id(module))
            if name is None:
                name = type(module).__name__
                self.names[id(module)] = name
            self.modules = None  # the model grew while recording: walked again when needed
        return name

    def _pre_hook(self, module, args):
        if _get_ident() != self.owner:
            return
        if self._paused or _jit_tracing():
            # Inside torch.jit.trace: reading a tensor's sizes there would put them into the
            # jit graph, so the ops are left unrecorded until the traced module returns. Checked
            # per module call, never per op.
            self._paused += 1
            self.thread = None
            return
        name = self.names.get(id(module))
        if name is None:
            name = self._module_name(module)
        self.module = name
        steps = self.steps
        if steps is not None and steps.model is None and not self._stack:
            steps.found(module, args)  # without a model: the first module called outside any
        self._stack.append((module, name))
        for watch in self.watchers:
            watch(module, args)

    def _post_hook(self, module, args, output):
        if _get_ident() != self.owner:
            return
        if self._paused:
            self._paused -= 1
            if not self._paused:
                self.thread = self.owner
            return
        stack = self._stack
        path = None
        if stack and stack[-1][0] is module:
            path = stack.pop()[1]
            self.module = stack[-1][1] if stack else ""
        mode = self.mode
        if mode is None or output is None:
            return
        mark_returned(mode.live, output, module, path or self._module_name(module),
                      module_call_site(mode._getframe(1)), self.module if stack else "",
                      self.data.module_calls)

    def _warned(self, message, category, filename, lineno):
        """A warning shown on this recorder's thread: noted on the op that raised it; placed
        at the user's line when it came from shapetrace's own code. The place it is shown at."""
        mode = self.mode
        rec = mode.current if mode is not None and threading.get_ident() == self.thread else None
        if rec is not None:
            rec.add_warning(f"{category.__name__}: {message}")
            if rec.site is not None and filename and is_own_file(filename):
                filename, lineno = rec.where[0], rec.where[1]
        return filename, lineno


class _Mode(TorchFunctionMode):
    """The hot path: runs for every tensor op of the traced thread.

    Written for speed at a student's sizes, where an op's kernel takes microseconds: attribute
    lookups are hoisted into locals, the common argument shapes are handled inline, and every
    table below turns a repeated question into one dict lookup."""

    def __init__(self, recorder: Recorder):
        super().__init__()
        self.recorder: Recorder | None = recorder
        self.records = recorder.data.records
        self.probes = recorder.probes
        self.observer = recorder.observer
        # id(tensor) -> meta for every tensor seen: an op's output meta (``src``: the op that
        # made it), or that of a tensor from outside the trace (``src`` None), shared by every
        # consumer; ``meta.ref`` (weak while recording) tells a dead tensor whose id was reused.
        self.live: dict[int, TensorMeta] = {}
        # func -> (kind, name, code, transparent body); those of C functions called from C known
        self.funcs: dict[Any, tuple] = dict(FROM_C)
        # Shared by every trace (tensors.SHARED): one tuple per distinct shape; the same for
        # recorded arguments and keyword arguments (read-only); id(code) -> (code, {key: site}),
        # one site tuple per place in the user's code (a loop records the same sites again).
        self.shapes, self.arg_tuples, self.kwarg_dicts, self.sites = shared_tables()
        self.current: OpRecord | None = None
        self.bodies = transparent_bodies()
        self._getframe = frame_getter()

    def count_use(self, t: Tensor, looks: int = 0) -> None:
        """Counts a use of ``t`` that is not a recorded op (``looks``: reads values, ``.item()``)."""
        meta = self.live.get(id(t))
        if meta is not None and meta._made_by is not None and meta.ref() is t:
            meta.used += 1
            if looks:
                meta.looked += 1

    def _describe(self, func, frame) -> tuple:
        """``(kind, op name, code, transparent body)`` of a function for the hot path (``kind``:
        bit flags of ``record.kinds``); ``frame``: the caller of ``__torch_function__``."""
        found = rebound(func, frame)
        if found is not None:
            kind, name, code = found
        else:
            try:
                kind, name, code = DESCRIBED[func]
            except (KeyError, TypeError):
                kind, name, code = describe(func)
        described = (kind, name, code, None if found else self.bodies.get(func))
        try:
            self.funcs[func] = described
            if code is None and described[3] is None and dispatching_caller(frame) is None:
                FROM_C[func] = described  # no name to patch on the way: so in every trace
        except TypeError:
            pass
        return described

    def _meta(self, t: Tensor, made_by=None, slot: int = 0) -> TensorMeta:
        """The metadata of ``t``; the value too for one-element tensors (even when autograd
        tracks it: a learned temperature is a scale the rules want to read)."""
        try:
            size = t.shape
            shape = self.shapes.get(size)
            if shape is None:
                shape = self.shapes[size] = tuple(size)
            meta = TensorMeta(shape, t.dtype, t.is_contiguous(), made_by, slot)
            if not shape or (shape[-1] == 1 and shape.count(1) == len(shape)):
                if not t.is_meta and has_value(t):
                    meta.value = t.item()
        except Exception:  # sparse, nested, data-dependent under fake tensors: shape only
            meta = odd_meta(t, made_by, slot)
        return meta

    def _meta_in(self, t: Tensor) -> TensorMeta:
        """The metadata of an operand: the very meta object of the op output it is, or of its
        first use when it came from outside the trace, so that each tensor is described once.
        A tensor changed behind the trace's back (``p.data = ...``) gets a meta of its own."""
        meta = self.live.get(id(t))
        if meta is not None and meta.ref() is t:
            made_by = meta._made_by
            if made_by is not None:
                meta.used += 1
            try:  # free unless it raises (Python 3.11)
                same = meta.shape == t.shape and meta.dtype == t.dtype
            except Exception:  # a strided nested tensor has no sizes: odd_meta described it
                same = True
            if same:
                return meta
            if made_by is not None:
                return self._meta(t, made_by, meta._slot)
        meta = self._meta(t, None)
        try:
            meta.ref = weakref.ref(t)
        except TypeError:  # a tensor subclass without weak references
            return meta
        self.live[id(t)] = meta
        return meta

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        recorder = self.recorder
        if recorder is None or _get_ident() != recorder.thread:
            return self._unrecorded(func, args, kwargs)
        try:
            kind, name, code, inner = self.funcs[func]
        except (KeyError, TypeError):
            kind, name, code, inner = self._describe(func, self._getframe(1))
        if kind & REBOUND:
            func = rebound_call(func, code, self._getframe(1))
        if kind & PASSES:
            if args and isinstance(args[0], Tensor):
                self.count_use(args[0], kind & LOOKS)
            return func(*args, **kwargs)

        live = self.live
        inputs: list[TensorMeta] = []
        stripped = []
        # Whether the call may pass an inf or a nan itself (x * -inf, a -inf fill: a float, a
        # container, a one-element tensor): only then is it scanned for them, after the op.
        numbers = False
        shared = True  # whether the stripped arguments may be one tuple shared by many records
        for a in args:  # the common cases inline: this runs for every op
            kind_of = type(a)
            if kind_of is int:  # a size or a dim: shareable, and never an inf or a nan
                stripped.append(a)
            elif kind_of is Tensor or isinstance(a, Tensor):
                n = len(inputs)
                stripped.append(_TENSOR_ARGS[n] if n < 16 else tensor_arg(n))
                meta = live.get(id(a))
                try:  # free unless it raises (Python 3.11): a strided nested tensor has no sizes
                    usual = meta is not None and meta.ref() is a \
                        and meta.shape == a.shape and meta.dtype == a.dtype
                except Exception:
                    usual = False
                if usual:  # a tensor met before, as it was then: the usual case
                    if meta._made_by is not None:  # an op output read again
                        meta.used += 1
                else:
                    meta = self._meta_in(a)
                inputs.append(meta)
                if meta.value is not None:
                    numbers = True
            elif isinstance(a, (list, tuple)):
                stripped.append(self._strip(a, inputs))
                shared = False
                if not _ints_only(a):
                    numbers = True
            else:
                if kind_of is float:
                    shared = False
                    if not math.isfinite(a):
                        numbers = True
                elif kind_of not in _SHAREABLE:
                    shared = False
                stripped.append(a)
        if shared:
            # Equal tuples of these types are interchangeable (no 1 == True == 1.0 confusion):
            # a loop records the same (<tensor 0>, -1) thousands of times, kept once.
            key = tuple(stripped)
            rec_args = self.arg_tuples.setdefault(key, key)
        else:
            rec_args = tuple(stripped)
        if kwargs:
            recorded = {}
            shared = True
            for k, v in kwargs.items():
                if type(v) in _PLAIN:  # dim=, dtype=, eps=: kept as given
                    if type(v) not in _SHAREABLE:
                        shared = False
                        if type(v) is float and not math.isfinite(v):
                            numbers = True
                elif isinstance(v, Tensor):
                    shared = False
                    v = self._strip(v, inputs)
                    if inputs[-1].value is not None:
                        numbers = True
                else:  # a list of tensors, sizes or fill values
                    v = self._strip(v, inputs)
                    shared = False
                    numbers = True
                recorded[k] = v
            if shared:
                key = tuple(recorded.items())
                recorded = self.kwarg_dicts.get(key) \
                    or self.kwarg_dicts.setdefault(key, ReadOnlyDict(recorded))
        else:
            recorded = _EMPTY_KWARGS
        # The shared ``(code, lasti, internal)`` of the user's frame for this op, or None: one
        # tuple per place in the user's code, keyed by the instruction and whether library
        # code sat in between (one call may reach torch directly on one run and through a
        # helper on another).
        site = site_from(self._getframe(1), code)
        if site is not None:
            user = site[0]
            entry = self.sites.get(id(user))
            if entry is None or entry[0] is not user:
                entry = self.sites[id(user)] = (user, {})
            site = entry[1].setdefault(site[1] * 2 + site[2], site)
        records = self.records
        index = len(records)
        rec = OpRecord(index, name, site, recorder.module, tuple(inputs) if inputs else (),
                       rec_args, recorded)
        records.append(rec)
        previous, self.current = self.current, rec
        try:
            if inner is not None:
                with self:
                    result = current_body(inner)(*args, **kwargs)
            else:
                result = func(*args, **kwargs)
        except BaseException as exc:
            rec.error = (type(exc).__name__, str(exc))
            if args and is_fake(args[0]):
                recorder.data.shapes_only = True  # its strides were torch's prediction
            raise
        finally:
            self.current = previous

        # The outputs (the usual single tensor handled here, the rest by _outputs).
        if type(result) is Tensor:
            outs = (result,)
            meta = self._meta(result, index, 0)
            meta.ref = weakref.ref(result)
            live[id(result)] = meta
            rec.outputs = (meta,)
            half = meta.dtype in HALF
        else:
            outs, half = self._outputs(rec, result, func, args)
            if not outs:
                if not inputs and records[-1] is rec:
                    records.pop()  # no tensor in or out: torch._C._set_grad_enabled and the like
                return result
        probes = self.probes
        if probes is not None:
            near = probes.near_softmax  # ops within SOFTMAX_DEPTH of a softmax: how far
            if kind & SOFTMAX:
                near[index] = 0
            elif near:
                hops = SOFTMAX_DEPTH
                for meta in inputs:
                    h = near.get(meta._made_by, hops)  # a tensor from outside (None): not there
                    if h < hops:
                        hops = h
                if hops < SOFTMAX_DEPTH:
                    near[index] = hops + 1
            # Values are looked at only where the op can make a NaN or an Inf: an op that only
            # moves values (a -inf fill) passes on what its inputs hold, looked at when tainted.
            finite = (kind & RISKY or numbers or half) and not kind & (EMPTY_MEMORY | SELECTS)
            if not finite and probes.tainted:
                finite = probes.reads_tainted(rec)  # follow a NaN or Inf towards the outputs
            if finite or kind & MULTIPLIES:
                probes.after(rec, outs, args, kwargs, finite=bool(finite),
                             weights=bool(kind & MULTIPLIES), numbers=numbers)
        if self.observer is not None:
            self.observer(rec, outs, args, kwargs)
        return result

    def _unrecorded(self, func, args, kwargs):
        """A call on another thread or while paused: run as untraced (see ``REBOUND``)."""
        frame = self._getframe(2)
        found = rebound(func, frame)
        if found is not None:
            func = rebound_call(func, found[2], frame)
        return func(*args, **kwargs)

    def _strip(self, a, inputs: list):
        if isinstance(a, Tensor):
            inputs.append(self._meta_in(a))
            return tensor_arg(len(inputs) - 1)
        if isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
            return type(a)(self._strip(x, inputs) for x in a) if type(a) in (list, tuple) else \
                tuple(self._strip(x, inputs) for x in a)
        return a

    def _outputs(self, rec: OpRecord, result, func, args) -> tuple[tuple, bool]:
        """Records the tensors an op returned: ``(those tensors, whether one is half precision)``."""
        if isinstance(result, Tensor):
            outs = (result,)
        elif isinstance(result, (tuple, list)):
            outs = tuple(r for r in result if isinstance(r, Tensor))
        elif result is None and func is Tensor.__setitem__ and args and isinstance(args[0], Tensor):
            outs = (args[0],)  # x[...] = y writes into x
        else:
            return (), False
        live = self.live
        half = False
        index = rec.index
        metas = []
        for slot, t in enumerate(outs):
            meta = self._meta(t, index, slot)
            try:
                meta.ref = weakref.ref(t)
            except TypeError:  # a tensor subclass without weak references: never found again
                meta.ref = dead
            else:
                live[id(t)] = meta
            metas.append(meta)
            if meta.dtype in HALF:
                half = True
        rec.outputs = tuple(metas)
        return outs, half


def _ints_only(a: list | tuple) -> bool:
    """Sizes and dims, the usual lists in a call: no inf or nan can hide in them."""
    for x in a:
        if type(x) is not int:
            return False
    return True
