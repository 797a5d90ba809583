"""``check()``: a module built at the probe sizes, one forward traced, the rules and the checks.

``check_target`` plans the build (``plan``: what to build it with and feed it, each guess
with its other readings), attempts it (``attempt``), and when the forward fails at an op that
reads a guessed value attempts the plan's next reading; the first attempt that runs stands.
The findings of the run that stands are its trace's (``Trace.diagnostics``): the trace rules',
what the forward raised, the behaviour checks' (``behaviour``) and the reference comparison's
(``reference``), in that order.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..analysis.facts import Analysis
from ..base.compat import eager_stance
from ..base.diagnostics import Skip
from ..base.dims import Dims
from ..base.errors import (
    ShapetraceError,
    TargetError,
    UsageError,
    drop_frames,
)
from ..base.ops import next_prime
from ..base.records import TraceData
from ..base.source import display_path
from ..behaviour.results import RERUNS
from ..behaviour.runs import gradient_hooks_accepted, plain_checkpoints
from ..record.fake import fake_mode
from ..report.results import Report, TargetResult
from ..report.trace import Trace
from ..rules.registry import RULES, diagnostic
from .attempt import Attempt, attempt, build
from .none_defaults import constructor_reading
from .readings import read_again
from .table_rows import TABLES, TableRows
from .docshapes import assume_documented
from .fit import allocation_failed, behaviour_out_of_memory, ensure_fits, out_of_memory
from .heads_read import SPLIT
from .devices import cpu_only
from .layout import assume_aligned, assume_layout, assume_width, layout_stated, sequence_first_reading
from .misfit import guess_failed, machine_failed
from .parent import in_parent, request_in
from .held import held_non_finite
from .plan import ImageInputs, Request, make_plan
from .preserve import outside_inference, preserved, project_state
from .reference_weights import SharedWeights
from .reuse import Done
from .widths import at_even_width

#: the checks that re-run the module, and with them the watch for writes into its inputs
WATCHED = (*RERUNS, "input-mutated")


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


def check_target(module, *, target: str | None = None, dims=None, **settings) -> TargetResult:
    """Like ``check`` but returns one TargetResult; problems building it go to ``.error``.
    ``settings`` are ``check``'s: ``init``, ``inputs``, ``causal``, ``fake``, ``behaviour``,
    ``seed``, ``reference``."""
    display = target or (module if isinstance(module, type) else type(module)).__qualname__
    started = time.perf_counter()
    try:
        dims = dims if isinstance(dims, Dims) else Dims(dims)
    except ShapetraceError as exc:
        return TargetResult(display, error=str(exc))
    dims = _apart_from_init(dims, settings.get("init"))
    notes = []
    if hasattr(module, "_orig_mod") and isinstance(module, torch.nn.Module) \
            and isinstance(module._orig_mod, torch.nn.Module):
        # A torch.compile'd module (OptimizedModule): the tracer sees ops in eager mode only.
        module = module._orig_mod
        notes.append("traced the eager module behind torch.compile")
    request = Request(outside_inference(module, notes), dims, display, **settings)
    with _threads_for(dims), eager_stance(), gradient_hooks_accepted(), plain_checkpoints():
        result = _checked(request, notes)
    result.seconds = time.perf_counter() - started
    return result


def _apart_from_init(dims: Dims, init) -> Dims:
    """A batch apart from the plain numbers the constructor is given: a batch of 5 beside
    ``num_classes=5`` makes an output (B, 5, C) whose batch axis cannot be told, so a batch
    shapetrace chose (not one the user set) that equals one of them is moved to the next prime
    no other size takes. Not a number named for the batch (``max_batch_size=5``: a cache for 5
    samples), and never the length (``window_size=7`` asks T to be a multiple of it)."""
    literals = set(_numbers_in(init))
    if dims.strict or "B" in dims.explicit or dims["B"] not in literals:
        return dims
    batch = next_prime(dims["B"] + 1, avoid=set(dims.values()) | literals)
    return Dims({**{n: dims[n] for n in dims.explicit}, "B": batch})


def _numbers_in(value, name: str = "") -> list[int]:
    """The plain integers in a constructor's arguments (nested tables and lists too), but
    those whose name says they are a batch's size."""
    if isinstance(value, bool) or "batch" in name or "bsz" in name:
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, Mapping):
        return [n for k, v in value.items() for n in _numbers_in(v, str(k))]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _numbers_in(v, name)]
    return []


#: elements of the largest activation below which a check runs on one thread
_SMALL = 1 << 20


def _threads_for(dims: Dims):
    """One thread for probe-size tensors (intra-op threads only add overhead there, and stall
    badly when the cores are busy, as under ``pytest -n 2``); the caller's setting for large
    sizes. Restored afterwards."""
    import contextlib

    from ..behaviour.runs import one_thread

    largest = dims.get("B", 1) * max(dims.get("T", 1), dims.get("S", 1)) * \
        max([dims.get("C", 1), dims.get("V", 1), *(v for k, v in dims.items() if len(k) > 1)])
    return one_thread() if largest <= _SMALL else contextlib.nullcontext()


#: how many times a constructor that refused the sizes is built again, each time as its error
#: asks (heads divisible by its key/value heads, then a head size by 8; a size left None, then
#: a number read as sides: ``none_defaults.constructor_reading``)
_CONSTRUCTOR_READINGS = 4


def _checked(request: Request, notes: list[str]) -> TargetResult:
    """The plan, its attempts and the findings of the one that stands, as a TargetResult; the
    project's module globals its constructors set are put back after (``project_state``)."""
    with project_state():
        return _checked_here(request, notes)


def _checked_here(request: Request, notes: list[str]) -> TargetResult:
    dims, module = request.dims, request.module
    # decided before the run, which leaves these rules out
    skipped = [name for name, rule in RULES.items() if rule.needs_values] if request.fake else []
    skips = [Skip(tuple(skipped), "--fake runs on fake tensors: no values")] if skipped else []
    failure = TargetResult(request.display, dims=dims.as_dict(), skipped=skipped, notes=notes)
    behaviour = request.behaviour and not request.fake
    if not request.behaviour:
        skips.append(Skip(WATCHED, "not asked for (behaviour=False)"))
    try:
        plan = _plan_or_parent(request, notes)
        if not request.fake:  # sizes that would not fit are refused before anything is allocated
            with preserved(module):
                note = ensure_fits(lambda meter: build(plan, meter), dims, plan.init,
                                   behaviour=behaviour)
            if note:
                behaviour = False
                notes.append(note)
                skips.append(Skip(WATCHED, "the sizes are too large for them"))
        with preserved(module), fake_mode(request.fake) as mode:
            for tries in range(_CONSTRUCTOR_READINGS + 1):
                try:
                    chosen = attempt(plan, mode=mode, watch=behaviour, skip=skipped)
                    break
                except TargetError as exc:  # a constructor that needs an even width
                    if tries == _CONSTRUCTOR_READINGS:
                        raise
                    plan = constructor_reading(plan, exc)  # (or heads of a multiple of its own)
                    notes.append(plan.note)
            run = functools.partial(attempt, mode=mode, watch=behaviour, skip=skipped)
            # one that ran only by broadcasting the guess up against a per-channel scale of four
            grown = chosen.ran and chosen.broadcast_up in (4, 5)  # or five axes: an image, a video
            if not chosen.ran or grown:
                chosen = read_again(plan, chosen, run, notes, only=ImageInputs if grown else None)
            if chosen.ran and chosen.raised_by(TABLES):  # rotary tables that lifted what they rotate
                chosen = read_again(chosen.plan, chosen, run, notes, only=TableRows)
            if not chosen.ran and request.inputs is None and request.init is None \
                    and isinstance(module, type):  # fed as a parent of its project feeds it
                chosen = _as_in_parent(request, chosen, notes, run)
            time_first = sequence_first_reading(chosen.plan, chosen, run)
            if time_first is not None:  # a time-first module fed a batch-first guess: evidence
                chosen, read_note = time_first
                notes.append(read_note)
            notes[:0] = [n for n in chosen.plan.read_notes if n not in notes]
            # a reading may have chosen other probe sizes: the rest runs at those
            result = _findings(chosen, chosen.plan.request, notes, skipped, skips, behaviour)
            _guessed_layout(result, chosen, time_first is not None)
            return result
    except (ShapetraceError, RuntimeError, MemoryError) as exc:
        if out_of_memory(exc):  # building it or its inputs: the sizes, not the user's code
            drop_frames(exc)
            from .attempt import _in

            exc = allocation_failed(exc, dims, _in(exc))
        elif not isinstance(exc, ShapetraceError):
            raise
        failure.error = str(exc)
        failure.exception = exc
        return failure


def _guessed_layout(result: TargetResult, chosen: Attempt, read: bool) -> None:
    """Findings that depend on which axis is the batch, in a run whose inputs were guessed
    from their names in a layout nothing in the code states (``layout``), become warnings that
    say so. ``read``: the layout was read from the run itself (a time-first op)."""
    request = chosen.plan.request
    if request.inputs is not None or request.fake or read or result.error:
        return
    guessed = tuple(spec.name for spec in chosen.plan.inputs
                    if len(getattr(spec, "dims", ())) >= 2 and spec.dims[0] == "B"
                    and (spec.dims[1] in ("T", "S") or tuple(spec.dims) in SPLIT.values()))
    if guessed and not layout_stated(chosen.model):
        assume_layout(result.diagnostics, guessed)
    stated = assume_documented(result.diagnostics, chosen.model, chosen.plan.inputs, chosen.plan.dims)
    assume_aligned(result.diagnostics, [s.name for s in chosen.plan.inputs
                                        if "T" in getattr(s, "dims", ()) and not getattr(s, "mask", None)])
    vectors = {name: arg for name, arg, spec in zip(chosen.names, chosen.args, chosen.plan.inputs)
               if isinstance(arg, torch.Tensor) and name not in stated  # a width its docstring says
               and tuple(getattr(spec, "dims", ())) in (("B", "T", "C"), ("B", "S", "C"))}
    assume_width(result.diagnostics, chosen.trace.records, vectors)


def _plan_or_parent(request: Request, notes: list[str]):
    """The plan for ``request``; when the class alone cannot be built or fed and nothing was
    given, the plan for the instance a parent class of its file builds, fed what the parent's
    forward passes it (``parent``), with a note. The first problem stands when no parent
    helps."""
    try:
        plan = make_plan(request)
    except (TargetError, UsageError) as exc:
        plan, problem = at_even_width(request, exc, notes), exc
        problem = problem if plan is None else plan.problem
    else:
        problem = plan.problem
    guessed = _required_masks(plan) if problem is None else ""
    if (problem is None and not guessed) or request.init is not None \
            or request.inputs is not None or not isinstance(request.module, type):
        if plan is None:
            raise problem
        return plan
    with project_state(restore=False) as state:
        found = in_parent(request, failed=problem is not None)
        if found is None:  # parents tried and left: the globals they set go with them
            state.restore()
    if found is None:
        if plan is None:
            raise problem
        return plan
    why = _first_sentence(problem) if problem is not None else \
        f"its {guessed} would be guessed from the code's use of it"
    notes.append(f"checked as {found.parent} builds it, with the inputs its forward passes: "
                 f"on its own, {why}")
    return make_plan(request_in(request, found))


def _as_in_parent(request: Request, failed: Attempt, notes: list[str], run) -> Attempt:
    """The attempt on the instance a parent class of the project builds, fed what the parent's
    forward hands it, when it runs where the guessed inputs did not; else ``failed``."""
    with project_state(restore=False) as state:
        found = in_parent(request, failed=True)
        try:
            again = None if found is None else run(make_plan(request_in(request, found)))
        except (TargetError, UsageError):
            again = None
        if again is None or not again.ran:  # parents tried and left: their globals too
            state.restore()
            return failed
    notes.append(f"checked as {found.parent} builds it, with the inputs its forward passes: on "
                 f"its own, the forward failed on the inputs guessed from their names")
    return again


def _required_masks(plan) -> str:
    """The masks forward requires that the plan guessed (a parent that makes them knows their
    shape), by name; "" when none."""
    params = inspect.signature(plan.request.cls.forward).parameters
    return ", ".join(s.name for s in plan.inputs if getattr(s, "mask", None) and s.name in params
                     and params[s.name].default is inspect.Parameter.empty)


def _first_sentence(exc: BaseException) -> str:
    text = str(exc)
    return text.split(": give ")[0].split("; ")[0]


def _findings(chosen: Attempt, request: Request, notes: list[str], skipped: list[str],
              skips: list[Skip], behaviour: bool) -> TargetResult:
    """The result of the attempt that stands: its trace's findings, then, when the forward
    ran, the behaviour checks' and the reference comparison's, all added to that one trace;
    and which checks did not run, and why."""
    trace = chosen.trace
    trace.diagnostics  # noqa: B018 - the trace rules run now, within the check's time
    result = TargetResult(request.display, dims=_used_dims(trace._analyse(), trace.dims),
                          trace=trace, skipped=skipped, notes=[*notes, *chosen.notes],
                          skips=skips)
    if machine_failed(result, chosen) or (request.inputs is None and not request.fake
                                         and guess_failed(result, chosen)):
        return result
    if _unfinished(result, chosen):
        return result
    if chosen.ran and not request.fake:
        _masks_absent(result, chosen)
        trace.add(held_non_finite(trace, chosen))
    if not chosen.ran:
        skips.append(Skip((*WATCHED, "reference-mismatch"),
                          "the forward raised: they need a forward that runs"))
    if chosen.ran and behaviour:
        trace.add(chosen.watch.diagnostics())
        _check_behaviour(result, chosen, request)
    if request.reference is None:
        skips.append(Skip(("reference-mismatch",), "no reference named"))
    elif not request.fake and chosen.ran:
        _compare(result, chosen, request)
    return result


def _unfinished(result: TargetResult, chosen: Attempt) -> bool:
    """A forward not written yet (``drive.unfinished``): its one finding stands alone, and
    nothing that re-runs it is made."""
    from .unfinished import unfinished, written_below

    found = unfinished(chosen)
    if found is None:
        return False
    below = written_below(type(chosen.model))
    if below:  # a base class: its subclasses write forward
        result.error = (f"{type(chosen.model).__name__} is a base class: its own forward is not "
                        f"written ({found.message.split(':')[0]}), and "
                        f"{', '.join(below[:3])} "
                        f"{'writes its' if len(below) == 1 else 'write their'} own; "
                        f"check {below[0]} instead")
        return True
    chosen.trace.diagnostics = [found]
    result.skips.append(Skip((*WATCHED, "reference-mismatch"), "the forward is not written yet"))
    return True


def _masks_absent(result: TargetResult, chosen: Attempt) -> None:
    """Optional masks given by a guess (``plan.GuessedMasks``) are checked the other way too:
    one more forward with them None, forward's default; a failure there is a finding."""
    from .plan import GuessedMasks

    guess = next((g for g in chosen.plan.guesses if isinstance(g, GuessedMasks)), None)
    if guess is None:
        return
    absent = guess.absent(chosen.plan, chosen)
    if absent is None:  # no code tests them with None: None is no way to call it
        return
    names = ", ".join(guess.names)
    params = inspect.signature(chosen.plan.request.cls.forward).parameters
    why = "its default" if all(params[n].default is None for n in guess.names) else \
        "which its code tests for"
    again = attempt(absent, watch=False)
    if again.ran:
        result.notes.append(f"run with {names} given and with {names} None ({why})")
        return
    at = again.raised_at
    chosen.trace.add([diagnostic(
        "op-failed", f"with {names} None ({why}), forward raised "
        f"{type(again.raised).__name__}: {_first_line(again.raised)}",
        f"Make forward work without {names}, or make it a required argument.",
        file=display_path(at[0]) if at else None, line=at[1] if at else None)])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


def _check_behaviour(result: TargetResult, chosen: Attempt, request: Request) -> None:
    dims = request.dims
    originals = chosen.watch.originals()
    if chosen.given_tensors:  # the tensors' own batch and time sizes, where anything names them
        dims = _sizes_named(dims, chosen.trace.dims, originals)
        if dims is None:
            result.notes.append(_UNNAMED_BATCH)
            result.skips.append(Skip(RERUNS, "nothing names the batch axis of the tensors given"))
            return
    reuse = request.reuse
    key = reuse.key(request, chosen.trace, "behaviour", chosen.model) if reuse is not None \
        else None
    done = reuse.get(key, chosen.trace) if reuse is not None else None
    if done is not None:  # the same code checked before in this run
        found, notes, skips = done.findings, done.notes, done.skips
    else:
        declared = {s.name: s.mask for s in chosen.plan.inputs if request.inputs is not None
                    and getattr(s, "mask", None) in ("keep", "drop")}
        made = request.inputs is None and any(getattr(s, "mask", None) for s in chosen.plan.inputs)
        codes = frozenset(s.name for s in chosen.plan.inputs if getattr(s, "high", None) is not None
                          and getattr(s, "dtype", None) == "float")  # whole numbers, cast to indices
        found, notes, skips = _behaviour(chosen.model, originals, chosen.names, chosen.trace,
                                         dims, request.causal, chosen.built_with, declared,
                                         frozenset(request.init or {}), made, codes)
        if reuse is not None:
            reuse.put(key, chosen.trace, Done(found, notes, skips))
    chosen.trace.add(found)
    result.notes.extend(notes)
    result.skips.extend(skips)


def _compare(result: TargetResult, chosen: Attempt, request: Request) -> None:
    """The reference comparison (``reference``): its findings and notes join the result."""
    from .reference import compare, resolve_reference

    reference = resolve_reference(request.reference, like=request.cls)
    reuse = request.reuse
    key = reuse.key(_with_reference(request, reference), chosen.trace, "reference",
                    chosen.model) if reuse is not None else None
    done = reuse.get(key, chosen.trace) if reuse is not None else None
    if done is not None:  # the same code compared before in this run
        found, notes = done.findings, done.notes
        why = done.skips[0].reason if done.skips else None
    else:
        try:
            found, notes, why = compare(chosen.model, chosen.args, reference,
                                        init=request.init if isinstance(request.module, type)
                                        else None, dims=request.dims, seed=request.seed,
                                        student=result.target)
        except SharedWeights as exc:  # the bug the reference exposes, in the student's terms
            found, notes, why = [diagnostic(
                "reference-mismatch", str(exc), "Build each copy on its own: "
                "nn.ModuleList([Head(...) for _ in range(n)]).", file=exc.file, line=exc.line,
                reference=reference.display)], [], None
        if reuse is not None:
            skips = [Skip(("reference-mismatch",), why)] if why is not None else []
            reuse.put(key, chosen.trace, Done(found, notes, skips))
    chosen.trace.add(found)
    result.notes.extend(notes)
    if why is not None:
        result.skips.append(Skip(("reference-mismatch",), why))


def _with_reference(request: Request, reference) -> Request:
    import dataclasses

    return dataclasses.replace(request, reference=reference)


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


def _behaviour(model, args, names, trace: Trace, dims: Dims, causal, init=None, declared=None,
               given=frozenset(), masks_made=False, codes=frozenset()):
    """Behaviour diagnostics, notes on what could not be checked or was observed, and the
    checks that did not run (``Skip``).

    Dependencies come from plain autograd (one forward, batched backward passes) rather than
    ``torch.func``: the first ``vmap`` of a process imports torch._dynamo, about a second.
    Causal intent comes from ``behaviour.intent``; when there is none, one note says that
    causal-leak was not checked and how to declare it (and that the module is causal in
    practice, unless a mask shapetrace made, ``masks_made``, may be why). ``declared``: the meanings of the masks
    the user declared (``mask-keep``, ``mask-drop``), by input name. ``codes``: the float inputs
    that hold whole numbers the forward casts to indices, changed as tokens are.
    """

    from ..behaviour import InternalCheckError, infer_roles, run_behaviour
    from ..behaviour.intent import causal_intent as intent_of
    from ..behaviour.intent import init_arguments, unchecked_note

    kwargs = init_arguments(type(model), init) if init is not None else None
    intent = intent_of(model, trace, declared=causal, init=kwargs, given=given)
    try:
        roles = [dataclasses.replace(r, meaning=(declared or {}).get(r.name),
                                     tokens=r.tokens or r.name in codes) if r is not None
                 else r for r in infer_roles(args, dims, names=names)]
        with cpu_only([]):  # re-run as the forward ran: .cuda() left on the CPU
            outcome = run_behaviour(model, args, roles, causal=intent.causal, dims=dims)
    except InternalCheckError as exc:  # shapetrace's bug, not the module's: say so, keep going
        if out_of_memory(exc.error):  # unless the sizes were too large for the checks
            return [], [behaviour_out_of_memory(dims)], [Skip(RERUNS, "out of memory")]
        if exc.partial is None:  # the checks that finished keep their findings
            return [], [_not_checked(exc)], [Skip(RERUNS, str(exc), internal=True)]
        outcome = exc.partial
    except Exception as exc:  # noqa: BLE001 - the module's failures are handled inside
        if out_of_memory(exc):
            return [], [behaviour_out_of_memory(dims)], [Skip(RERUNS, "out of memory")]
        error = InternalCheckError("behaviour", exc)
        return [], [_not_checked(error)], [Skip(RERUNS, str(error), internal=True)]
    notes = [*outcome.skipped, *(n for n in outcome.notes if n != outcome.causal_note)]
    skips = list(outcome.skips)
    if intent.causal is None and causal is None and outcome.causal_checkable:
        note = unchecked_note(type(model).__name__, intent,
                              causal_in_practice=bool(outcome.causal_note) and not masks_made)
        notes.append(note)
        skips.append(Skip(("causal-leak",), note.removeprefix("causal-leak not checked: ")))
    elif not intent.causal:
        why = ("declared not causal" if causal is False else intent.evidence
               or "nothing shows that it is meant to be causal")
        skips.append(Skip(("causal-leak",), why))
    return list(outcome.diagnostics), notes, skips


def _not_checked(error) -> str:
    return f"{' and '.join(RERUNS)} not checked: {error}"


def causal_intent(trace: TraceData | Analysis, model=None) -> bool | None:
    """True when the trace (or ``model``'s flags and class names) shows that the module is
    meant to be causal, else None (unknown). See ``behaviour.intent``."""
    from ..behaviour.intent import causal_intent as intent_of

    return intent_of(model, trace).causal
