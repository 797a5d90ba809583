"""``check()``: build a module at the probe sizes, trace one forward, run the rules and checks."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..analysis.facts import Analysis
from ..base.compat import module_tables
from ..base.diagnostics import Diagnostic
from ..base.dims import Dims
from ..base.errors import ShapetraceError, TargetError, UsageError
from ..base.ops import SDPA, SOFTMAXES, next_prime
from ..base.records import OpRecord, TraceData
from ..base.source import display_path, innermost_user_frame
from ..record.fake import NeedsValuesError, fake_mode
from ..record.fastpath import FastPathWatch
from ..report.results import Report, TargetResult
from ..report.trace import Trace
from ..rules import run_trace_rules
from ..rules.registry import RULES, diagnostic
from .fit import allocation_failed, behaviour_out_of_memory, ensure_fits, out_of_memory


def check(module, *, init: Mapping[str, Any] | None = None,
          inputs: Sequence[str | torch.Tensor] | None = None,
          dims: Mapping[str, int] | Dims | None = None, causal: bool | None = None,
          fake: bool = False, target: str | None = None, behaviour: bool = True,
          seed: int = 0, reference=None) -> Report:
    """Trace ``module`` at the probe sizes and run every rule and behaviour check.

    ``module`` is an ``nn.Module`` subclass (built with ``init``, whose dim-name strings resolve
    to sizes, or with arguments inferred from parameter names) or an instance. ``inputs`` are
    specs such as ``"x=B,T,C"`` or tensors; without them they are inferred from ``forward``.
    ``causal`` declares whether the module is meant to be causal (None: inferred).
    ``reference`` (a TARGET string, a class or an instance) is compared at the same weights
    (``reference-mismatch``).
    """
    result = check_target(module, init=init, inputs=inputs, dims=dims, causal=causal, fake=fake,
                          target=target, behaviour=behaviour, seed=seed, reference=reference)
    return Report([result])


def _name_of(module) -> str:
    cls = module if isinstance(module, type) else type(module)
    return cls.__qualname__


def check_target(module, *, init=None, inputs=None, dims=None, causal=None, fake=False,
                 target=None, behaviour=True, seed=0, reference=None) -> TargetResult:
    """Like ``check`` but returns one TargetResult; problems building it go to ``.error``."""
    display = target or _name_of(module)
    started = time.perf_counter()
    try:
        dims = dims if isinstance(dims, Dims) else Dims(dims)
    except ShapetraceError as exc:
        return TargetResult(display, error=str(exc))
    result = TargetResult(display, dims=dims.as_dict())
    if fake:  # decided before the run, which reads it to leave these rules out
        result.skipped = [name for name, rule in RULES.items() if rule.needs_values]
    if hasattr(module, "_orig_mod") and isinstance(module, torch.nn.Module) \
            and isinstance(module._orig_mod, torch.nn.Module):
        # A torch.compile'd module (OptimizedModule): the tracer sees ops in eager mode only.
        module = module._orig_mod
        result.notes.append("traced the eager module behind torch.compile")
    try:
        if not fake:  # sizes whose tensors would not fit are refused before anything is allocated
            with _preserved(module):
                note = ensure_fits(lambda meter: _build(module, init, inputs, dims, seed, meter),
                                   dims, init, behaviour=behaviour)
            if note:
                behaviour = False
                result.notes.append(note)
        with _preserved(module), fake_mode(fake) as mode:
            model, args, names, built_with = _build(module, init, inputs, dims, seed, mode)
            notes = list(result.notes)
            _run(result, model, args, names, dims, causal=causal,
                 behaviour=behaviour and not fake, init=built_with)
            retry = _as_tokens(result, module, inputs, dims)
            if retry is not None:  # the inferred inputs were ids, not vectors: an embedding said so
                result.notes = notes
                model, args, names, built_with = _build(module, init, retry, dims, seed, mode)
                _run(result, model, args, names, dims, causal=causal,
                     behaviour=behaviour and not fake, init=built_with)
            if inputs is None and not fake:
                _guess_failed(result, args, names)
            other = None if fake or result.error is not None else \
                _ambiguous_guess(result, built_with, init, dims)
            if other is not None:  # a guessed constructor argument may have meant another size
                again = _other_reading(result, other, notes, lambda init_: _build(
                    module, init_, retry if retry is not None else inputs, dims, seed, mode),
                    init, dims=dims, causal=causal, behaviour=behaviour)
                if again is not None:
                    model, args, names, built_with = again
            if reference is not None and not fake and result.trace.exception is None:
                _compare(result, module, model, args, reference, init, dims, seed)
    except (ShapetraceError, RuntimeError, MemoryError) as exc:
        if out_of_memory(exc):  # building it or its inputs: the sizes, not the user's code
            _drop_frames(exc)
            exc = allocation_failed(exc, dims, _in(exc))
        elif not isinstance(exc, ShapetraceError):
            raise
        result.error = str(exc)
        result.exception = exc
    result.seconds = time.perf_counter() - started
    return result


def _compare(result: TargetResult, module, model, args, reference, init, dims, seed) -> None:
    """The reference comparison (``drive.reference``): its findings and notes join the result."""
    from .reference import compare, resolve_reference

    cls = module if isinstance(module, type) else type(module)
    found, notes = compare(model, args, resolve_reference(reference, like=cls),
                           init=init if isinstance(module, type) else None, dims=dims, seed=seed,
                           student=result.target)
    result.diagnostics.extend(found)
    result.notes.extend(notes)


class _preserved:
    """Leaves the global random state as it was and, for an instance, its parameters, buffers,
    attributes and training flags (SPEC section 6): the run seeds, switches to ``eval()`` and
    runs ``forward``, which may write buffers (a step counter, a cache)."""

    def __init__(self, module):
        self.module = module if isinstance(module, torch.nn.Module) else None

    def __enter__(self):
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() \
            if torch.cuda.is_available() and torch.cuda.is_initialized() else None
        self.saved = []
        if self.module is not None:
            with torch.no_grad():
                for m in self.module.modules():
                    tensors = {}
                    params, buffers, modules = module_tables(m)
                    for table in (params, buffers):
                        for t in table.values():
                            if isinstance(t, torch.Tensor) and id(t) not in tensors:
                                grad = getattr(t, "grad", None)
                                tensors[id(t)] = (t, _copy(t), t.requires_grad, grad,
                                                  None if grad is None else _copy(grad))
                    self.saved.append((m, dict(m.__dict__), dict(params), dict(buffers),
                                       dict(modules), tensors))
        return self

    def __exit__(self, *exc_info):
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        with torch.no_grad():
            for m, attrs, params, buffers, modules, tensors in self.saved:
                for table, old in zip(module_tables(m), (params, buffers, modules)):
                    table.clear()
                    table.update(old)
                for key in [k for k in m.__dict__ if k not in attrs]:
                    del m.__dict__[key]
                m.__dict__.update(attrs)
                for t, value, requires_grad, grad, grad_value in tensors.values():
                    if value is not None:
                        t.copy_(value)
                    if t.requires_grad != requires_grad:
                        t.requires_grad_(requires_grad)
                    if grad is not None and grad_value is not None:
                        grad.copy_(grad_value)
                    t.grad = grad
        self.saved = []
        return False


def _copy(t: torch.Tensor):
    """A copy of ``t``'s values, or None for one without plain values (meta, fake, sparse)."""
    try:
        if t.is_meta or t.layout != torch.strided:
            return None
        return t.detach().clone()
    except Exception:  # noqa: BLE001 - a tensor subclass that cannot be copied is left alone
        return None


_EVEN = re.compile(r"divisible by 2\b|\beven\b|% ?2\b", re.I)


def _needs_even(exc: BaseException, dims: Dims) -> str:
    """A constructor that wants an even size (sinusoidal or rotary positions: Whisper's
    ``d_model``) refused an odd probe size: which ``--dims`` gives it one."""
    text = str(exc)
    if not _EVEN.search(text):
        return ""
    named = [n for n, size in dims.items() if size % 2 and re.search(rf"\b{size}\b", text)]
    if not named:
        return ""
    name = named[0]
    if name == "C" and "C" not in dims.explicit and "H" in dims and "d" in dims:
        change = f"--dims d=8, which makes C={dims['H'] * 8}"
    else:
        change = f"--dims {name}={dims[name] + 1}"
    return (f" (the probe sizes are odd primes and {name}={dims[name]} is odd: give it an even "
            f"size, e.g. {change})")


def _build(module, init, inputs, dims: Dims, seed: int, mode):
    from ..behaviour.probe import seed as seed_all
    from . import spec as _spec

    seed_all(seed)
    if isinstance(module, type):
        if not issubclass(module, torch.nn.Module):
            raise TargetError(f"{module.__qualname__} is not an nn.Module subclass")
        kwargs = _spec.infer_init(module, dims, given=init or {})
        try:
            model = module(**kwargs)
        except NeedsValuesError as exc:  # under --fake: say where the constructor read a value
            raise NeedsValuesError(f"{module.__qualname__}(){_where(exc)}: {exc}") from None
        except (ShapetraceError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # GeneratorExit or a BaseException of the user's own too
            shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            raise TargetError(f"{module.__qualname__}({shown}) raised {type(exc).__name__}: "
                              f"{_one_line(exc)}{_where(exc)}{_needs_even(exc, dims)}") from exc
        forward_owner = module
    elif isinstance(module, torch.nn.Module):
        if init:
            raise UsageError("init is only used when check() is given a class, not an instance")
        model = module
        forward_owner = type(module)
        kwargs = None
    else:
        raise UsageError(f"check() expects an nn.Module subclass or instance, got {type(module).__name__}")
    model.eval()

    if inputs is None:
        specs = _spec.infer_inputs(forward_owner, dims)
    else:
        specs = [_spec.parse_input(i, dims) if isinstance(i, str) else i for i in inputs]
    generator = torch.Generator().manual_seed(seed) if mode is None else None
    args, names = [], []
    for i, spec in enumerate(specs):
        if isinstance(spec, torch.Tensor):
            args.append(spec)
            names.append(f"input {i}")
        else:
            args.append(_spec.make_input(spec, dims, generator=generator))
            names.append(spec.name)
    if inputs is not None:
        args, names = _in_forward_order(model, args, names)
    return model, args, names, kwargs


def _in_forward_order(model, args: list, names: list) -> tuple[list, list]:
    """Declared inputs placed by their names: ``--input input_features=... --input
    decoder_input_ids=...`` on ``forward(input_features, attention_mask=None,
    decoder_input_ids=None)`` passes the ids third, with the mask's default second, instead of
    handing them to ``attention_mask``. Left as given unless every input is named after one of
    forward's positional parameters and every parameter skipped has a default."""
    import inspect

    if not names or any(n.startswith("input ") for n in names) or len(set(names)) != len(names):
        return args, names
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return args, names
    position = {p.name: i for i, p in enumerate(params)}
    if any(n not in position for n in names):
        return args, names
    given = dict(zip(names, args))
    last = max(position[n] for n in names)
    placed, placed_names = [], []
    for p in params[:last + 1]:
        if p.name in given:
            placed.append(given[p.name])
        elif p.default is not p.empty:
            placed.append(p.default)
        else:
            return args, names  # a required parameter nobody declared: as given
        placed_names.append(p.name)
    return placed, placed_names


def _as_tokens(result: TargetResult, module, inputs, dims: Dims):
    """The inferred inputs with token ids in place of the name-inferred vectors, when the run
    with vectors failed at an embedding handed floats (``src``/``tgt``/``x`` of a model that
    embeds them): shapetrace's guess was wrong, not the user's code. None otherwise."""
    from . import spec as _spec

    exc = result.trace.exception if result.trace is not None else None
    if inputs is not None or exc is None or "'indices'" not in str(exc):
        return None
    forward_owner = module if isinstance(module, type) else type(module)
    try:
        return _spec.as_tokens(_spec.infer_inputs(forward_owner, dims))
    except ShapetraceError:
        return None


def _guess_failed(result: TargetResult, args, names) -> None:
    """When the forward failed at an op that read an inferred input as it came in (a ViT's
    ``x`` guessed as (B, T, C) and handed to a Conv2d), the guess was wrong, not the user's
    code: the run becomes a target error asking for the inputs, not an op-failed finding."""
    rec = _failed_op(result.trace)
    if rec is None:
        return
    for arg, name in zip(args, names):
        if not isinstance(arg, torch.Tensor):
            continue
        if any(m.src is None and tuple(m.shape) == tuple(arg.shape) and m.dtype == arg.dtype
               for m in rec.inputs):
            shown = ", ".join(str(n) for n in arg.shape)
            result.error = (f"input {name!r}, guessed from its name as ({shown}), does not fit "
                            f"{rec.op}, the first op that reads it ({rec.error[0]}: "
                            f"{_one_line_text(rec.error[1])}); give forward's inputs with "
                            f"--input NAME=DIMS (or inputs in the config), e.g. "
                            f"--input {name}=B,3,32,32 for images")
            result.diagnostics = []
            return


#: constructor parameter names that mean a different size in different codebases, guessed as
#: the first meaning (``base.names``): ``num_tokens`` is the vocabulary in x-transformers and
#: Bloem's GPT, the sequence length in an MLP-Mixer's token mixing. name -> (the other dim,
#: how to say it)
_AMBIGUOUS_INIT = {"num_tokens": ("T", "the sequence length (T)")}


def _ambiguous_guess(result: TargetResult, built_with, init, dims: Dims):
    """``(name, other size, reading, op)`` when the forward failed at an op that reads a tensor
    sized by a constructor argument guessed from an ambiguous name; else None. The caller runs
    the module again with the other reading, and keeps whichever runs: a guess is never reported
    as the user's bug."""
    rec = _failed_op(result.trace)
    if rec is None or not isinstance(built_with, Mapping):
        return None
    for name, (dim, reading) in _AMBIGUOUS_INIT.items():
        value = built_with.get(name)
        if name in (init or {}) or type(value) is not int or dims.get(dim) in (None, value):
            continue
        if any(value in m.shape for m in rec.inputs):
            return name, dims[dim], reading, rec.op
    return None


def _other_reading(result: TargetResult, other, notes: list, build, init, *, dims: Dims,
                   causal, behaviour: bool):
    """Runs the module again with an ambiguous constructor argument read the other way
    (``other``, from :func:`_ambiguous_guess`); keeps that run and returns what ``build`` made
    for it when it runs, else puts the first run back (it failed either way: the first run's
    finding is the user's bug) and returns None. ``notes``: the result's notes before the
    first run."""
    name, size, reading, op = other
    first = (result.trace, result.diagnostics, result.dims, list(result.notes))
    result.notes = list(notes)
    again = build({**(init or {}), name: size})
    _run(result, *again[:3], dims, causal=causal, behaviour=behaviour, init=again[3])
    if result.trace.exception is not None:
        result.trace, result.diagnostics, result.dims, result.notes = first
        return None
    result.notes.append(f"{name} read as {reading}: as the vocabulary size it did not fit {op}; "
                        f"give --init {name}=SIZE to choose")
    return again


def _failed_op(trace) -> OpRecord | None:
    """The last op that raised in a forward that ended in an exception, or None."""
    if trace is None or trace.exception is None:
        return None
    return next((r for r in reversed(trace.records) if r.error is not None), None)


def _one_line_text(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


def _one_line(exc: BaseException) -> str:
    return _one_line_text(str(exc))


def _in(exc: BaseException) -> str:
    site = user_frame(exc) or (exc.__cause__ is not None and user_frame(exc.__cause__))
    return f" in {site[0]}:{site[1]}" if site else ""


def _where(exc: BaseException) -> str:
    site = user_frame(exc)
    return f" at {site[0]}:{site[1]}" if site else ""


def user_frame(exc: BaseException) -> tuple[str, int] | None:
    """The innermost traceback frame in the user's code (not torch, shapetrace or helpers)."""
    found = innermost_user_frame(exc.__traceback__, installed_is_library=False)
    return (display_path(found[0]), found[1]) if found else None


def _run(result: TargetResult, model, args, names, dims: Dims, *, causal, behaviour: bool,
         init: Mapping[str, Any] | None = None) -> None:
    watch = None
    if behaviour:  # values are needed: not under --fake
        from ..behaviour.mutation import MutationWatch

        watch = MutationWatch(args, names)
    heads: dict[int, list] = {}
    keep = _head_keeper(heads)

    def observe(rec, outs, op_args, op_kwargs) -> None:
        keep(rec, outs, op_args, op_kwargs)
        if watch is not None:
            watch(rec, outs, op_args, op_kwargs)

    # tensors the caller passed come at their own sizes: name them as trace() does, from the
    # dims given and what the model proves (probe names only if they came at probe sizes)
    given = any(isinstance(a, torch.Tensor) and n.startswith("input ") for a, n in zip(args, names))
    trace = Trace(model, dims={k: dims[k] for k in dims.explicit} if given else dims, rules=False,
                  observer=observe)
    exc_seen = None
    with torch.no_grad(), FastPathWatch(model) as fast:
        try:
            with trace:
                model(*args)
        except NeedsValuesError as exc:  # under --fake: the module cannot run without values
            site = user_frame(exc)
            where = f" at {site[0]}:{site[1]}" if site else ""
            raise NeedsValuesError(f"forward{where}: {exc}") from None
        except (KeyboardInterrupt, SystemExit):  # the command line explains an exit() itself
            raise
        except BaseException as exc:  # the user's forward raised (a BaseException of their
            if out_of_memory(exc):    # own, GeneratorExit too): becomes a diagnostic, unless
                where = _in(exc)      # the sizes did not fit
                _drop_frames(exc)
                raise allocation_failed(exc, dims, where) from None
            exc_seen = exc
    result.trace = trace
    trace.head_weights = heads
    if fast.note:
        result.notes.append(fast.note)
    analysis = trace._analyse()
    result.dims = _used_dims(analysis, trace.dims)
    diagnostics = run_trace_rules(analysis, skip=result.skipped)
    if exc_seen is not None:
        diagnostics.extend(_exception_diagnostics(trace, exc_seen, diagnostics))
        _drop_frames(exc_seen)
    elif behaviour:
        diagnostics.extend(watch.diagnostics())
        if given:  # the tensors' own batch and time sizes, where anything names them
            dims = _sizes_named(dims, trace.dims, watch.originals())
            if dims is None:
                result.notes.append(_UNNAMED_BATCH)
                result.diagnostics = diagnostics
                return
        found, notes = _behaviour(model, watch.originals(), names, trace, dims, causal, init)
        diagnostics.extend(found)
        result.notes.extend(notes)
    result.diagnostics = diagnostics


def _head_keeper(heads: dict[int, list], limit: int | None = None):
    """An observer that keeps one head of each attention's weights (``record.probes.head_weights``),
    by record index, for the report's heatmaps: the first call of each attention (module and
    line; a loop runs it again), at most ``limit`` of them."""
    from ..record.probes import head_weights

    seen: set = set()

    def keep(rec, outs, args, kwargs) -> None:
        if rec.op in SOFTMAXES or rec.op == SDPA:
            key = (rec.module, rec.site)
            if key in seen or (limit is not None and len(heads) >= limit):
                return
            weights = head_weights(rec, outs, args, kwargs)
            if weights is not None:
                seen.add(key)
                heads[rec.index] = weights

    return keep


def _drop_frames(exc: BaseException) -> None:
    """Lets the frames of a forward that raised go: ``check()`` caught the exception and no one
    else sees it, but the result keeps it, and its traceback would keep every local of the
    forward (activations) alive as long as the result."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__


def _used_dims(analysis: Analysis, dims: Dims) -> dict[str, int]:
    """The probe sizes that name some axis of the trace (B and T always)."""
    import re

    used = {"B", "T"}
    word = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    for rec in analysis.records:
        for meta in (*rec.inputs, *rec.outputs):
            used.update(word.findall(analysis.shape_of(meta)))
    if "C" in used and dims.get("C") == (dims.get("H") or 0) * (dims.get("d") or 0):
        used.update(("H", "d"))
    return dims.as_dict(used)


def _exception_diagnostics(trace: TraceData, exc: BaseException, found: list, *,
                           what: str = "forward", in_module: bool = True) -> list[Diagnostic]:
    """A failure that no trace rule explained (``found``: what the rules said): annotation
    errors, plain Python errors. ``what`` raised (a forward, a script); ``in_module``: the
    finding names the module that ran last."""
    from ..rules.annotations import annotation_diagnostic

    diag = annotation_diagnostic(exc)
    if diag is not None:
        return [diag]
    failed = next((r for r in reversed(trace.records) if r.error is not None), None)
    if failed is not None and any(d.data.get("index") == failed.index for d in found):
        return []
    site = user_frame(exc)
    where = dict(file=site[0] if site else None, line=site[1] if site else None)
    if in_module:
        where["module"] = trace.records[-1].module if trace.records else None
    return [diagnostic("op-failed", f"{what} raised {type(exc).__name__}: {_one_line(exc)}",
                       **where)]


_UNNAMED_BATCH = ("batch-leak and causal-leak not checked: nothing names the batch axis of the "
                  "tensors given; name their sizes, e.g. check(model, inputs=[x], "
                  "dims={'B': 2, 'T': 10}), or annotate forward's inputs (Float[Tensor, 'B T C'])")


def _sizes_named(probe: Dims, named: Dims, args) -> Dims | None:
    """The sizes the behaviour checks read the batch, time and source axes by, for tensors the
    caller passed at their own sizes: ``named`` (``dims=``, forward's annotations, what the model
    proves) where it names B, else the probe sizes when the tensors came at them, else None
    (nothing says which axis is the batch: the checks are left out, never guessed)."""
    shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
    if "B" in named:
        sizes = {k: named[k] for k in ("B", "T", "S") if k in named}
        taken = {s for shape in shapes for s in shape} | set(sizes.values())
        for name in ("T", "S"):  # one nothing names is no axis: a size no tensor has
            if name not in sizes:
                sizes[name] = next_prime(max(taken) + 1, avoid=taken)
                taken.add(sizes[name])
        return Dims(sizes)
    if any(probe["B"] in shape for shape in shapes):
        return probe
    return None


def _behaviour(model, args, names, trace: Trace, dims: Dims, causal, init=None):
    """Behaviour diagnostics, and notes on what could not be checked or was observed.

    Dependencies come from plain autograd (one forward, batched backward passes) rather than
    ``torch.func``: the first ``vmap`` of a process imports torch._dynamo, about a second.
    Causal intent comes from ``behaviour.intent``; when there is none, one note says that
    causal-leak was not checked and how to declare it.
    """
    from ..behaviour import InternalCheckError, infer_roles, run_behaviour
    from ..behaviour.intent import causal_intent as intent_of
    from ..behaviour.intent import init_arguments, unchecked_note

    kwargs = init_arguments(type(model), init) if init is not None else None
    intent = intent_of(model, trace, declared=causal, init=kwargs)
    try:
        roles = infer_roles(args, dims, names=names)
        outcome = run_behaviour(model, args, roles, causal=intent.causal, dims=dims)
    except InternalCheckError as exc:  # shapetrace's bug, not the module's: say so, keep going
        if out_of_memory(exc.error):  # unless the sizes were too large for the checks
            return [], [behaviour_out_of_memory(dims)]
        return [], [str(exc)]
    except Exception as exc:  # noqa: BLE001 - the module's failures are handled inside
        if out_of_memory(exc):
            return [], [behaviour_out_of_memory(dims)]
        return [], [str(InternalCheckError("behaviour", exc))]
    notes = [*outcome.skipped, *(n for n in outcome.notes if n != outcome.causal_note)]
    if intent.causal is None and causal is None and outcome.causal_checkable:
        notes.append(unchecked_note(type(model).__name__, intent,
                                    causal_in_practice=bool(outcome.causal_note)))
    return list(outcome.diagnostics), notes


def causal_intent(trace: TraceData | Analysis, model=None) -> bool | None:
    """True when the trace (or ``model``'s flags and class names) shows that the module is
    meant to be causal, else None (unknown). See ``shapetrace._behaviour.intent``."""
    from ..behaviour.intent import causal_intent as intent_of

    return intent_of(model, trace).causal
