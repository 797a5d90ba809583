"""Steps: a training loop's repeats recognised, counted and not kept.

A **step** is everything from one call of the step module (the traced model; without one, the
first module called outside any other) to the next: its forward, the loss, the backward, the
optimizer step. The first step of each kind is recorded in full and checked. A step whose ops,
lines, modules and shapes are those of a step kept before is counted and its records dropped,
so the trace stays the size of one step of each kind however long the run.

Once a kind of step has repeated, its repeats are not recorded at all: the tracer's mode leaves
the torch-function stack, so the user's ops run as if untraced, and at each call of the step
module a light key (the module's train/eval mode, the grad mode, the input shapes) says whether
the step is still of that kind. A new key (the last, smaller batch; an eval step) is recorded in
full, and every ``recheck`` unrecorded steps one is recorded again, in case something the key
does not see has changed.

Values stay watched at a cost per step, not per op, and nothing is read back to the host in a
step that is not recorded: the step module's outputs, one small gradient before each optimizer
step and that parameter after it leave flags on the device (``record.flags``), read every
``flags.every`` steps and at the end; the parameters are looked at all together once
something is found and at the end. The first forward flagged is run again, recorded, from the
inputs, random state, parameters and buffers it began with (kept on the device), the module's
state put back afterwards: the value probes find the op that made the NaN. A recorded step
reads values as it runs, and finds them at once.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass, field

import torch
from torch.optim import optimizer as _torch_optimizer

from ..base.compat import disable_torch_function, tracing_check
from .flags import DeviceFlags
from .hooks import LOCK, unhook
from .probes import finiteness
from .tensors import tensors_in


Tensor = torch.Tensor
_is_tracing = tracing_check()

#: unrecorded steps of one kind between two recorded ones
RECHECK = 100


@dataclass
class StepRun:
    """Records ``start`` to ``end`` are step ``first``; ``count`` steps (``first`` included, the
    last of them ``last``) ran the same ops at the same lines with the same shapes. ``rerun``:
    the records are a forward run again, recorded, to find where a NaN was made or what it
    raised."""

    start: int
    end: int
    first: int
    count: int = 1
    last: int = 0
    rerun: bool = False
    signature: tuple = field(default=(), repr=False, compare=False)
    rechecks: int = field(default=0, repr=False, compare=False)  # found unchanged when recorded

    def __post_init__(self):
        if not self.last:
            self.last = self.first


@dataclass(frozen=True)
class ValueEvent:
    """A NaN or an Inf seen over the run: in a forward's output (``forward``), in the gradients
    an optimizer was about to use (``gradients``) or in the parameters it had just updated
    (``parameters``)."""

    kind: str
    what: str  # "NaN" or "Inf"
    step: int  # the step (call of the step module) it was seen in
    optimizer_step: int  # optimizer steps taken so far (this one included, for its hooks)
    optimizer: str = ""  # "AdamW.step"
    names: tuple[str, ...] = ()  # which parameters
    recorded: bool = False  # the step was being recorded: the probes saw where it was made
    #: parameters only: whether every gradient the optimizer was given was looked at and held
    #: neither (None: not all of them could be)
    finite_gradients: bool | None = None


class StepWatch:
    """Finds step boundaries for a :class:`~shapetrace.record.tracer.Recorder`, folds repeated
    steps and watches values. The recorder calls :meth:`begin` and :meth:`returned` from its
    module hooks; while entered, optimizer hooks watch gradients and parameters."""

    def __init__(self, recorder, model: torch.nn.Module | None, spans: list | None = None, *,
                 recheck: int = RECHECK):
        self.recorder = recorder
        self.records = recorder.data.records
        self.model = model  # the step module; None until the first module called outside any
        self.spans = spans if spans is not None else []
        self.recheck = recheck
        #: the steps kept, one per kind (and any forward run again), in record order
        self.runs: list[StepRun] = []
        self.events: list[ValueEvent] = []
        self.step = 0  # calls of the step module so far
        self.optimizer_steps = 0
        self._start: int | None = None  # where the step being recorded began
        self._begun = 0  # the step being recorded
        self._key = None  # its light key
        self._stable: dict = {}  # light key -> the run its steps repeat
        self._by_signature: dict[tuple, StepRun] = {}
        self._unrecorded: dict = {}  # light key -> steps not recorded since it last was
        self._full_next = False  # record the next step whatever its key (after a NaN)
        self._rerunning = False
        self._depth = 0  # calls of the step module in progress (one unless it calls itself)
        self._rng: Tensor | None = None  # the random state an unrecorded step began with
        self._kwargs: dict = {}
        self._seen: set[str] = set()  # the kinds of ValueEvent found so far: the first only
        self._names: dict[int, str] | None = None  # id(parameter) -> its name in the model
        self._sentinels: dict[int, object] = {}  # id(optimizer) -> the gradient it is judged by
        self._optimizer = ""  # the last optimizer step's name, "AdamW.step"
        self._check_after = False  # look at the parameters after this optimizer step
        self._handles: list = []
        self._owner: int | None = None
        #: the trace's ``OptimizerSpans`` when its hooks are these (one pair of optimizer hooks)
        self.span_watch = None
        #: what the unrecorded steps looked at, on the device, read every ``flags.every`` steps
        self.flags = DeviceFlags()
        self.checking = False  # the flags are being read (and a forward run again)

    # --- entering and leaving ---------------------------------------------------------------

    def __enter__(self) -> StepWatch:
        optimizer = _torch_optimizer
        self._owner = threading.get_ident()
        with LOCK:
            self._handles = [optimizer.register_optimizer_step_pre_hook(self._before_optimizer),
                             optimizer.register_optimizer_step_post_hook(self._after_optimizer)]
        if self.model is not None:
            self._watch(self.model)
        return self

    def __exit__(self, *exc) -> bool:
        unhook(self._handles)
        if not self._rerunning:
            self._close(final=True)
            self._read_flags()
        if self.events or self.optimizer_steps:
            self.checking = True  # the end of the run: values are read
            self._parameters(None)  # a NaN the last optimizer step made
            self.checking = False
        self._stable.clear()
        self._sentinels.clear()
        self._by_signature.clear()
        self._rng = None
        self._kwargs = {}
        for run in self.runs:
            run.signature = ()
        self.recorder = None  # no cycle with the recorder: a dropped trace is freed at once
        return False

    def _watch(self, model: torch.nn.Module) -> None:
        """Hooks on the step module alone (the global module hooks are off between recorded
        steps): where each step begins and what it returns; and the names of its parameters."""
        with LOCK:
            self._handles.append(model.register_forward_pre_hook(self._pre, with_kwargs=True))
            self._handles.append(model.register_forward_hook(self._post, with_kwargs=True,
                                                             always_call=True))

    def found(self, module, args) -> None:
        """Without a model, the recorder's global hook names the step module at its first call,
        which begins step 1 (its own hooks see the calls after)."""
        self.model = module
        self._watch(module)
        self._pre(module, args, {})

    # --- step boundaries (the step module's hooks) -------------------------------------------

    # a hook registered with its keyword arguments may be called without them while another
    # thread registers its own on the same module (torch fills its two hook tables one after the
    # other): both hooks take either call
    def _pre(self, module, args, kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        if threading.get_ident() != self._owner or self._rerunning or _jit_tracing():
            return None
        self._depth += 1
        if self._depth == 1:  # not a call of the step module inside itself
            self._kwargs = kwargs
            self.begin(module, args)
        return None

    def _post(self, module, args, *kwargs_and_output):
        output = kwargs_and_output[-1]
        if threading.get_ident() != self._owner or self._rerunning or not self._depth \
                or _jit_tracing():
            return None
        self._depth -= 1
        if self._depth:
            return None
        if output is None and sys.exc_info()[0] is not None and self._start is None:
            # the forward raised in a step that was not recorded: run it again, recorded, so
            # that the op that failed is found at its line
            self._rerun(module, args)
            return None
        self.returned(module, args, output)
        return None

    def begin(self, module, args) -> None:
        """A call of the step module begins step ``self.step + 1``: the step before it is
        settled, and this one is recorded or only counted."""
        self.step += 1
        self._close()
        if self.flags.due(self.step):
            self._read_flags()
        key = _light_key(module, args, self.recorder)
        run = self._stable.get(key)
        unrecorded = self._unrecorded.get(key, 0)
        if run is not None and not self._full_next and unrecorded < self._recheck_after(run) \
                and self.recorder.stop_recording():
            run.count += 1
            run.last = self.step
            self._unrecorded[key] = unrecorded + 1
            self._rng = torch.get_rng_state()
            self.flags.begin(self.step, module, self._rng)
            return
        self.recorder.resume_recording(module)
        self._full_next = False
        self._unrecorded[key] = 0
        self._start, self._begun, self._key = len(self.records), self.step, key

    def _recheck_after(self, run: StepRun) -> int:
        """How many steps of a kind go unrecorded before one is recorded again: ``recheck``,
        doubling with each recheck that found the kind unchanged (a long run is rechecked
        about ten times, however long)."""
        return self.recheck * min(1 << max(0, run.rechecks), 64)

    def returned(self, module, args, output) -> None:
        """The step module returned ``output``: looked at for NaN and Inf."""
        if "forward" in self._seen:
            return
        if self._start is None and self.recorder.light:  # looked at on the device, read later
            self.flags.forward(self.step, self.optimizer_steps, output, args, self._kwargs)
            return
        # NaN only: an Inf in what a model returns may be meant (logits masked with -inf)
        what = _non_finite(output, nan_only=True)
        if what is None:
            return
        self._seen.add("forward")
        recorded = self._start is not None
        self.events.append(ValueEvent("forward", what, self.step, self.optimizer_steps,
                                      recorded=recorded))
        self._full_next = True  # the next step is recorded: what follows a NaN is seen
        if not recorded:
            self._rerun(module, args)
        self._parameters(None)

    def _close(self, final: bool = False) -> None:
        """Settles the step being recorded: kept as a new kind, or counted and dropped.
        ``final``: the block has ended."""
        start = self._start
        if start is None:
            return
        self._start = None
        records = self.records
        if len(records) == start:
            return
        if final and not self.runs:  # the only step: nothing to compare it with
            self.runs.append(StepRun(start, len(records), self._begun))
            return
        signature = _signature(records, start)
        run = self._by_signature.get(signature)
        if run is None and final:
            # the last step stops where the block ends, before the ops a loop runs ahead of
            # each call (the next batch made): a kept step that begins the same way is its kind
            run = next((r for r in self.runs if not r.rerun
                        and r.signature[:len(signature)] == signature), None)
        if run is not None:
            self._drop(start)
            run.count += 1
            run.last = self._begun
            if self._stable.get(self._key) is run:
                run.rechecks += 1
            self._stable[self._key] = run
            return
        run = StepRun(start, len(records), self._begun, signature=signature)
        self.runs.append(run)
        self._by_signature[signature] = run
        self._stable.pop(self._key, None)

    def _drop(self, start: int) -> None:
        """Forgets records ``start`` on (a repeat of a kept step) and everything that points at
        them: the tensors they made, the probes' notes, optimizer spans."""
        records = self.records
        dropped = records[start:]
        del records[start:]
        mode = self.recorder.mode
        live = mode.live if mode is not None else {}
        for rec in dropped:
            for meta in rec.outputs:
                ref = meta.ref
                t = ref() if callable(ref) else None
                if t is not None and live.get(id(t)) is meta:
                    del live[id(t)]
        for key in [k for k, m in live.items() if not callable(m.ref) or m.ref() is None]:
            del live[key]  # tensors gone since: their ids will be reused
        probes = self.recorder.probes
        if probes is not None:
            for table in (probes.near_softmax, probes.tainted, probes.row_sums):
                for key in [k for k in table if k >= start]:
                    del table[key]
        spans = self.spans
        while spans and spans[-1].start >= start:
            spans.pop()

    def _rerun(self, module, args, kwargs: dict | None = None, step: int | None = None) -> None:
        """Runs the forward that returned a NaN or raised again, recorded, as it ran: the same
        random state; its buffers (running statistics) and the random state put back after."""
        if not self.recorder.resume_recording():
            return
        start = len(self.records)
        buffers = []
        with disable_torch_function(), torch.no_grad():
            buffers = [(b, b.clone()) for b in module.buffers()]
        state = torch.get_rng_state()
        self._rerunning = True
        try:
            if self._rng is not None:
                torch.set_rng_state(self._rng)
            with torch.no_grad():
                module(*args, **(self._kwargs if kwargs is None else kwargs))
        except Exception:  # what the run it repeats raised, if anything: recorded on its op
            pass
        finally:
            self._rerunning = False
            self.recorder.stop_recording()
            torch.set_rng_state(state)
            with disable_torch_function(), torch.no_grad():
                for b, saved in buffers:
                    b.copy_(saved)
        if len(self.records) > start:
            self.runs.append(StepRun(start, len(self.records), step or self.step, rerun=True))

    # --- optimizer hooks ----------------------------------------------------------------------

    def _before_optimizer(self, opt, args, kwargs):
        """Before an optimizer step: one small gradient looked at (a NaN loss, or one made by
        the backward, reaches every gradient behind it, the first layers' too), and all of them
        when it holds one."""
        if self.span_watch is not None:
            self.span_watch._pre(opt, args, kwargs)
        if threading.get_ident() != self._owner:
            return None
        self.optimizer_steps += 1
        self._optimizer = f"{type(opt).__name__}.step"
        if "gradients" in self._seen:
            return None
        sentinel = self._sentinels.get(id(opt))
        if sentinel is None or sentinel.grad is None:
            sentinel = self._sentinels[id(opt)] = _sentinel(opt)
        if sentinel is not None and self.recorder is not None and self.recorder.light:
            self.flags.values("gradients", self.step, self.optimizer_steps, self._optimizer, opt,
                              sentinel.grad)
            return None
        if sentinel is None or _non_finite(sentinel.grad) is None:
            return None
        params = [p for group in opt.param_groups for p in group["params"] if p.grad is not None]
        bad = [p for p in params if _non_finite(p.grad) is not None]
        if bad:
            self._seen.add("gradients")
            self.events.append(ValueEvent("gradients", _non_finite(bad[0].grad), self.step,
                                          self.optimizer_steps, self._optimizer,
                                          self._named(bad)))
            self._full_next = True
            self._check_after = True
        return None

    def _after_optimizer(self, opt, args, kwargs):
        if self.span_watch is not None:
            self.span_watch._post(opt, args, kwargs)
        if threading.get_ident() != self._owner:
            return None
        if self._check_after:
            self._check_after = False
            self._parameters(opt)
        elif "parameters" not in self._seen and self.recorder is not None \
                and self.recorder.light:
            sentinel = self._sentinels.get(id(opt))
            if sentinel is not None:
                self.flags.values("parameters", self.step, self.optimizer_steps,
                                  self._optimizer, opt, sentinel)
        return None

    # --- the flags of unrecorded steps (``record.flags``) ----------------------------------

    def _read_flags(self) -> None:
        """Reads the flags the unrecorded steps left: the first NaN of each kind becomes an
        event at the step it was seen in, and a flagged forward is run again, recorded, from
        the state it began with."""
        self.checking = True
        try:
            for flag in self.flags.read():
                if flag.kind in self._seen:
                    continue
                self._seen.add(flag.kind)
                self._full_next = True
                what = "NaN" if math.isnan(flag.value) else "Inf"
                if flag.kind == "forward":
                    self.events.append(ValueEvent("forward", what, flag.step,
                                                  flag.optimizer_step))
                    self._rerun_flagged(flag.step)
                    continue
                params = [p for group in flag.owner.param_groups for p in group["params"]]
                held = params if flag.kind == "parameters" else \
                    [p.grad for p in params if p.grad is not None]
                bad = [p for p, t in zip(params, held) if _non_finite(t) is not None] \
                    if flag.kind == "parameters" else \
                    [p for p in params if p.grad is not None and _non_finite(p.grad) is not None]
                named = self._named(bad) if bad else (flag.optimizer and
                                                      self._named([self._sentinels[id(flag.owner)]]))
                self.events.append(ValueEvent(flag.kind, what, flag.step, flag.optimizer_step,
                                              flag.optimizer, tuple(named or ())))
        finally:
            self.flags.settled()
            self.checking = False

    def _rerun_flagged(self, step: int) -> None:
        """The forward of unrecorded ``step`` run again, recorded, from the parameters,
        buffers, inputs and random state it began with (kept on the device); the module's
        state and the random state put back after."""
        module = self.model
        found = self.flags.rerun_state(step, module)
        if found is None or not isinstance(module, torch.nn.Module):
            return
        groups, kept_args, rng = found
        state = self.flags.state_of(module)
        args, kwargs = self.flags.arguments(kept_args)
        with disable_torch_function(), torch.no_grad():
            now = [t.clone() for t in state]
            for group in groups:
                group.load()
        saved_rng = self._rng
        self._rng = rng
        try:
            self._rerun(module, args, kwargs, step=step)
        finally:
            self._rng = saved_rng
            with disable_torch_function(), torch.no_grad():
                torch._foreach_copy_(state, now)

    def _parameters(self, opt) -> None:
        """Looks at the parameters (``opt``'s, else the step module's) once something was found
        (and when the trace ends): which hold a NaN or an Inf, after which optimizer step."""
        if "parameters" in self._seen:
            return
        if opt is not None:
            params = [p for group in opt.param_groups for p in group["params"]]
        elif isinstance(self.model, torch.nn.Module):
            params = list(self.model.parameters())
        else:
            return
        what = _any_non_finite(params)
        if what is None:
            return
        bad = [p for p in params if _non_finite(p) is not None]
        self._seen.add("parameters")
        finite_gradients = None
        grads = [p.grad for p in params]
        if "gradients" not in self._seen and all(g is not None for g in grads):
            found = _any_non_finite(grads)
            finite_gradients = found is None
            if found is not None:  # the small gradient looked at before the step held none
                self._seen.add("gradients")
                self.events.append(ValueEvent(
                    "gradients", found, self.step, self.optimizer_steps, self._optimizer,
                    self._named([p for p in params if _non_finite(p.grad) is not None])))
        self.events.append(ValueEvent("parameters", what, self.step, self.optimizer_steps,
                                      self._optimizer, self._named(bad),
                                      finite_gradients=finite_gradients))
        self._full_next = True

    def _named(self, params: list) -> tuple[str, ...]:
        if self._names is None:  # named once, when something is found
            try:
                self._names = {id(p): name for name, p in self.model.named_parameters()}
            except Exception:  # a module whose parameters cannot be listed: shapes name them
                self._names = {}
        return tuple(self._names.get(id(p)) or f"a parameter of shape {tuple(p.shape)}"
                     for p in params)


def _jit_tracing() -> bool:
    """Inside ``torch.jit.trace``: a call there is not a step, and reading a value there would
    put it into the jit graph (and fail the trace's own check that two tracings agree)."""
    return _is_tracing()


def _sentinel(opt):
    """The gradient an optimizer step is judged by: the first small parameter with one (a
    first layer's bias or norm, which every NaN the backward makes reaches)."""
    first = None
    for group in opt.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.numel() <= 4096:
                return p
            if first is None:
                first = p
    return first


def _light_key(module, args, recorder=None) -> tuple:
    """What a step's kind is judged by while it is not recorded: the module's mode, autograd's
    and each tensor argument's shape and dtype. Read with torch functions disabled (through the
    recorder's mode each read would cost an op); while ``recorder`` records this thread, each
    tensor argument is counted as used, as those reads would have counted it."""
    with disable_torch_function():
        shapes = tuple((a.shape, a.dtype) if isinstance(a, Tensor) else type(a) for a in args)
    mode = recorder.mode if recorder is not None and not recorder.light else None
    if mode is not None and recorder.thread == threading.get_ident():
        for a in args:
            if isinstance(a, Tensor):
                mode.count_use(a)
    return (module.training, torch.is_grad_enabled(), torch.is_inference_mode_enabled(), shapes)


def _signature(records: list, start: int) -> tuple:
    """What makes two steps the same: each op, its line, its module and its shapes, and whether
    it raised, warned or made a NaN (a step that differs there is kept too)."""
    return tuple((r.op, r.site, r.module, tuple(m.shape for m in r.inputs),
                  tuple(m.shape for m in r.outputs), r.error is not None, len(r.warnings),
                  r.non_finite is not None) for r in records[start:])


def _non_finite(output, nan_only: bool = False) -> str | None:
    """"NaN" or "Inf" when a floating tensor in ``output`` holds one (``nan_only``: a NaN),
    else None."""
    with disable_torch_function():
        for t in tensors_in(output):
            state = finiteness(t, only_nan=nan_only)
            if state is not None and (state[0] or state[1]):
                return "NaN" if state[0] else "Inf"
    return None


def _any_non_finite(tensors: list) -> str | None:
    """"NaN" or "Inf" when any of ``tensors`` holds one: one max-abs over them all (which no
    finite value overflows, unlike a sum or a norm)."""
    tensors = [t for t in tensors if isinstance(t, Tensor) and t.is_floating_point()
               and t.numel() and not t.is_meta]
    if not tensors:
        return None
    with disable_torch_function(), torch.no_grad():
        try:
            peak = torch.nn.utils.get_total_norm([t.detach() for t in tensors],
                                                 norm_type=math.inf).item()
        except Exception:  # a tensor subclass, a mix of devices: the slow way
            return next((w for w in map(_non_finite, tensors) if w is not None), None)
    if math.isnan(peak):
        return "NaN"
    return "Inf" if math.isinf(peak) else None
