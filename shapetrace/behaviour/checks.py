"""Running the behaviour checks: determinism, batch independence, causality.

``run_behaviour`` makes a probe (a float64 eval copy), runs the module twice for determinism
(and twice more with dropout rates raised from 0), works out the dependencies, locates the first
leaking op of each kind, and turns what it found into diagnostics (``messages``). The caller's
module, its inputs, the global random state and the thread count are left as they were.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from ..base.compat import dropout_base_class
from ..base.diagnostics import Diagnostic, Skip
from ..base.dims import Dims
from ..record.built import built_by
from . import (constant, inverted, locate, masks, messages, ordering, reach, removed, repeat,
               residual, rotary, shuffle, streams, tables, textbook)
from .errors import InternalCheckError, raised_by_user
from .probe import Probe
from .results import (
    PERMUTATION_RTOL,
    RERUNS,
    RTOL,
    BehaviourResult,
    DependencyResult,
    looks_causal,
)
from .roles import InputRole, infer_roles
from .runs import copy_module, float64_default, max_change, one_thread, outputs_equal


class _Stage:
    """Which check is running, for the message of an internal error, and which have finished
    (their findings stand when a later one fails)."""

    def __init__(self, check: str):
        self.check = check
        self.done: set[str] = set()


def dependencies(module: nn.Module, inputs: Sequence[Any],
                 roles: Sequence[InputRole | None] | None = None, *,
                 dims: Dims | None = None, kwargs: Mapping[str, Any] | None = None,
                 rtol: float = RTOL, batched: bool | None = None) -> DependencyResult:
    """Which output (sample, position) depends on which input (sample, position).

    Runs a float64 eval copy of ``module`` (the module itself is not changed) with ``inputs``
    as positional arguments and ``kwargs`` as fixed keyword arguments. ``batched`` forces the
    vmap-batched backward (True) or one backward per row (False); None picks the cheaper one.
    Raises what the module raises, and an ``InternalCheckError`` for a failure of its own.
    """
    dims = dims or Dims()
    roles = list(roles) if roles is not None else infer_roles(inputs, dims)
    reason = _ambiguity(dims, roles)
    if reason:
        return DependencyResult(dims["B"], dims["T"], reason=reason)
    stage = _Stage("dependency")
    with _internal_errors(stage):
        probe = Probe(copy_module(module), inputs, roles, dims, kwargs, root=type(module).__name__)
        try:
            with torch.random.fork_rng(devices=[]), one_thread(), float64_default():
                torch.default_generator.manual_seed(0)  # what fork_rng restores
                reference = probe.reference()
                return probe.dependencies(reference, rtol, batched)
        finally:
            probe.close()


def check_behaviour(module: nn.Module, inputs: Sequence[Any],
                    roles: Sequence[InputRole | None] | None = None, *,
                    causal: bool | None, dims: Dims | None = None,
                    kwargs: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """``causal-leak``, ``batch-leak`` and ``nondeterministic-eval`` diagnostics for a module."""
    return run_behaviour(module, inputs, roles, causal=causal, dims=dims, kwargs=kwargs).diagnostics


def run_behaviour(module: nn.Module, inputs: Sequence[Any],
                  roles: Sequence[InputRole | None] | None = None, *,
                  causal: bool | None, dims: Dims | None = None,
                  kwargs: Mapping[str, Any] | None = None) -> BehaviourResult:
    """Run every behaviour check. ``causal=None`` skips the causal-leak check (the dependency
    pattern is still reported, and ``notes`` says when the module is causal in practice).

    A module that raises while re-running gives no diagnostics and one ``skipped`` line; a
    failure of the checks themselves raises ``InternalCheckError``."""
    dims = dims or Dims()
    roles = list(roles) if roles is not None else infer_roles(inputs, dims)
    result = BehaviourResult()
    try:
        copied = copy_module(module)
    except Exception as exc:  # noqa: BLE001 - a module that cannot be copied is not checked
        result.skip(RERUNS, f"the module could not be copied ({exc})",
                    f"behaviour checks: the module could not be copied ({exc})")
        return result
    trainable = frozenset(n for n, p in module.named_parameters() if p.requires_grad)
    stage = _Stage("behaviour")
    try:
        with _internal_errors(stage):
            probe = Probe(copied, inputs, roles, dims, kwargs, root=type(module).__name__)
            probe.built = built_by(module)
            probe.built_indices = built_by(module, integers=True)
            try:
                with torch.random.fork_rng(devices=[]), one_thread(), float64_default():
                    torch.default_generator.manual_seed(0)  # what fork_rng restores
                    _run_checks(probe, result, causal, stage, trainable)
                    result.diagnostics.extend(_read_once(probe, result, (
                        ("attention-textbook", textbook.textbook_attention),
                        ("rotary-pairing", rotary.rotations_kept),
                        ("position-frequencies", tables.frozen_tables),
                        ("positions-ignored", ordering.positions_ignored),
                        ("residual-missing", residual.residual_missing))))
            finally:
                probe.close()
    except InternalCheckError as exc:
        exc.partial = _partial(result, stage, exc)
        raise
    except Exception as exc:  # noqa: BLE001 - the module's own failure: the trace reports it
        result.diagnostics = []
        why = f"the module raised while re-running ({type(exc).__name__}: {exc})"
        result.skip(RERUNS, why, f"behaviour checks: {why}")
    return result


def _partial(result: BehaviourResult, stage: _Stage, exc: InternalCheckError) -> BehaviourResult:
    """What stands of ``result`` after an internal error: the findings and notes of the checks
    that finished; every other check skipped, the reason naming the internal error."""
    partial = BehaviourResult()
    partial.diagnostics = [d for d in result.diagnostics if d.rule in stage.done]
    partial.skips = [s for s in result.skips if set(s.checks) <= stage.done]
    partial.skipped = [line for line in result.skipped
                       if any(line.startswith(name) for name in stage.done)]
    failed = tuple(name for name in RERUNS if name not in stage.done)
    if failed:
        partial.skips.append(Skip(failed, str(exc), internal=True))
        partial.skipped.append(f"{' and '.join(failed)} not checked: {exc}")
    return partial


@contextmanager
def _internal_errors(stage: _Stage):
    """Lets the module's own exceptions through; turns shapetrace's into InternalCheckError."""
    try:
        yield
    except InternalCheckError:
        raise
    except Exception as exc:
        if raised_by_user(exc):
            raise
        raise InternalCheckError(stage.check, exc) from exc


def _ambiguity(dims: Dims, roles: Sequence[InputRole | None]) -> str | None:
    B, T = dims["B"], dims["T"]
    if B == T:
        return (f"B and T are both {B}, so the batch and time axes of the outputs cannot be told "
                f"apart; give them different sizes (e.g. --dims B=5,T=7)")
    has_context = any(r is not None and r.stream == "context" and r.time is not None for r in roles)
    if has_context and dims["S"] == B:
        return f"B and S are both {B}, so the batch axis cannot be told apart from the context axis"
    if B < 2:
        return "B is 1: there is no other sample to leak into"
    return None


_DROPOUT_NAME = re.compile(r"drop|\Ap\Z|\Ap_\w+")  # dropout, attn_pdrop, drop_rate, p, p_attn
_PROBE_P = 0.1
#: The rate of the runs that tell a rate-dependent eval output from random draws that agreed:
#: one keep/drop draw per sample (stochastic depth) gives B draws, which at 0.1 agree between
#: two runs a third of the time; at 0.5, 1 in 2**B.
_RECHECK_P = 0.5
_RECHECK_RUNS = 3


@contextmanager
def _dropout_switched_on(model: nn.Module, rate: float = _PROBE_P):
    """Dropout rates of 0 raised to 0.1 for the determinism check, then put back; yields
    whether there was any rate to raise.

    Modules are built with dropout=0.0 so every other check sees a deterministic function;
    that would also hide ``F.dropout(x, self.dropout)`` left on in eval. With a real rate, eval
    stays deterministic exactly when every dropout follows ``self.training``.
    """
    dropout = dropout_base_class()
    saved: list = []
    for sub in model.modules():
        if isinstance(sub, dropout) and sub.p == 0.0:
            saved.append((sub, "p", sub.p))
            sub.p = rate
        for key, value in list(vars(sub).items()):
            if (type(value) is float and value == 0.0 and _DROPOUT_NAME.search(key)
                    and not key.startswith("_")):
                saved.append((sub, key, value))
                setattr(sub, key, rate)
    try:
        yield bool(saved)
    finally:
        for sub, key, value in reversed(saved):
            setattr(sub, key, value)


def _determinism(probe: Probe, first, result: BehaviourResult) -> bool:
    """``nondeterministic-eval``: whether two runs on the same inputs agree at the rates the
    module was built with (dropout 0), which the batch-reorder check needs; the finding, if any,
    goes to ``result``.

    A second run at the built rates, then two with the dropout rates raised
    (``_dropout_switched_on``) to catch dropout left on in eval. The runs are shared: with rates
    to raise, the raised pair comes first, and when both agree with ``first`` the module gave
    the same output three times, so the run at the built rates is not repeated. When the raised
    pair differs, or agrees with itself but not with ``first`` (an eval output that depends on
    the rate, as in ``x * (1 - p)``), the built rates are run again to tell which finding it
    is. Without rates to raise, the raised pair would repeat the first two runs, so it is left
    out. A raised pair that agrees with itself but not with ``first`` may also be random draws
    that happened to agree (per-sample stochastic depth keeps all B samples in both runs a
    third of the time at 0.1), so a few more runs at a rate of 0.5 decide (``_recheck``).
    """
    raised_finding = None  # (largest change, op) of two runs with the rates raised
    with torch.no_grad(), _dropout_switched_on(probe.model) as raised:
        if raised:
            once, twice = probe.call(probe.args), probe.call(probe.args)
            if not outputs_equal(once, twice):  # the op is located with the rates still raised
                raised_finding = (max_change(once, twice), _quietly(locate.first_difference, probe))
            elif outputs_equal(first, once):
                return True
    if raised and raised_finding is None:
        raised_finding = _recheck(probe)
    with torch.no_grad():
        second = probe.call(probe.args)
    if not outputs_equal(first, second):
        rec = _quietly(locate.first_difference, probe)
        result.diagnostics.append(messages.nondeterministic(probe, max_change(first, second), rec))
        return False
    if raised_finding is not None:
        result.diagnostics.append(messages.nondeterministic(probe, *raised_finding))
    return True


def _recheck(probe: Probe):
    """(largest change, op) when runs with the dropout rates at 0.5 differ, else None."""
    with torch.no_grad(), _dropout_switched_on(probe.model, _RECHECK_P):
        runs = [probe.call(probe.args)]
        for _ in range(_RECHECK_RUNS - 1):
            runs.append(probe.call(probe.args))
            if not outputs_equal(runs[0], runs[-1]):
                return max_change(runs[0], runs[-1]), _quietly(locate.first_difference, probe)
    return None


def _pools_time(leak: locate.Leak, T: int) -> bool:
    """Whether the first op that combines positions is a pooling over T rather than attention
    among positions: its output has no time axis, or a single one."""
    if leak.used is None:
        return True
    outputs = leak.rec.outputs
    return bool(outputs) and tuple(outputs[0].shape).count(T) <= 1


def _judged_streams(probe: Probe, dep, result: BehaviourResult) -> None:
    """Only the inputs the first causally masked op depends on are judged for the future
    (``streams``): a source sequence read whole (an encoder-decoder's) is left out, with a note."""
    found = _quietly(streams.causal_streams, probe)
    if found is None:
        return
    reached, masked = found
    left = sorted({p.source for p in dep.pairs if p.stream == "query" and p.source not in reached})
    for pair in dep.pairs:
        if pair.source in left:
            pair.stream = "source"
    result.notes.append(
        f"causal-leak: judged through {', '.join(sorted(reached))}, the input"
        f"{'s' if len(reached) > 1 else ''} the causally masked `{masked.source or masked.op}` at "
        f"line {masked.line} depends on; {', '.join(left)} never reach{'es' if len(left) == 1 else ''} "
        f"it, a sequence the module reads whole (the source of an encoder-decoder)")


def _quietly(find, *args, **kwargs):
    """``find(...)``, or None when the module raises on this run: the finding stands even when
    no op can be named. shapetrace's own failures propagate."""
    try:
        return find(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        if raised_by_user(exc):
            return None
        raise


def _property(probe: Probe, result: BehaviourResult, rule: str, check, *args) -> list[Diagnostic]:
    """The findings of one value property (``repeat``, ``reach``, ``masks``, ``textbook``), or
    none when it cannot be judged: the module failing on the property's extra runs says
    nothing (the other checks' findings stand); a failure in shapetrace's own code is never
    silent: the property is listed as not checked, naming the internal error."""
    try:
        return check(*args) or []
    except Exception as exc:  # noqa: BLE001
        if not raised_by_user(exc):
            _not_checked(result, rule, exc)
        return []
    finally:
        probe.restore_state()


def _not_checked(result: BehaviourResult, rule: str, exc: Exception) -> None:
    """``rule`` listed as not checked, for an internal error of shapetrace's own code."""
    error = InternalCheckError(rule, exc)
    result.skips.append(Skip((rule,), str(error), internal=True))
    result.skipped.append(f"{rule} not checked: {error}")


def _read_once(probe: Probe, result: BehaviourResult, checks) -> list[Diagnostic]:
    """The findings of the value properties that read one recorded run (``locate.Reader``):
    ``checks``, (rule, the function that makes its reader), share one run of the module. A
    reader that fails in shapetrace's own code, made, keeping or judging, is listed as not
    checked and the others go on; the module failing on the run says nothing, as in
    :func:`_property`."""
    readers: dict[str, locate.Reader] = {}
    for rule, make in checks:
        try:
            readers[rule] = make(probe)
        except Exception as exc:  # noqa: BLE001 - shapetrace's own: the module has not run
            _not_checked(result, rule, exc)

    def keep(rec, outs, args, kwargs) -> None:
        for rule, reader in list(readers.items()):
            try:
                reader.keep(rec, outs, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - shapetrace's own: the op has run
                del readers[rule]
                _not_checked(result, rule, exc)

    if not readers:
        return []
    try:
        run = locate.record(probe, probe.args, grad=False, also=keep)
    except Exception as exc:  # noqa: BLE001
        if not raised_by_user(exc):
            for rule in readers:
                _not_checked(result, rule, exc)
        return []
    finally:
        probe.restore_state()
    found: list[Diagnostic] = []
    for rule, reader in readers.items():
        found.extend(_property(probe, result, rule, reader.judge, run))
    return found


def _run_checks(probe: Probe, result: BehaviourResult, causal: bool | None, stage: _Stage,
                trainable: frozenset[str] = frozenset()) -> None:
    stage.check = "nondeterministic-eval"
    first = probe.reference()
    deterministic = _determinism(probe, first, result)
    stage.done.add("nondeterministic-eval")
    if deterministic:
        result.diagnostics.extend(_property(probe, result, "stateful-forward",
                                            repeat.stateful_forward, probe, first))
        result.diagnostics.extend(_property(probe, result, "weight-without-effect",
                                            reach.weights_without_effect, probe, trainable))
    else:  # random in eval: the runs below draw the same numbers, so that only the inputs
        probe.reseed = 0  # they change can move an output
        first = probe.reference()
    result.diagnostics.extend(_property(probe, result, "mask-ignored", masks.padding_ignored, probe))

    stage.check = "batch-leak and causal-leak"
    reason = _ambiguity(probe.dims, probe.roles)
    if reason:
        result.skip(("batch-leak", "causal-leak"), reason)
        stage.done.update(RERUNS)
        return
    dep = probe.dependencies(first)
    if deterministic and not dep.reason:
        probe.confirm(dep, first)
    side = shuffle.side_pairs(probe, first) if not dep.reason else []
    dep.pairs.extend(side)
    result.dependency = dep
    if dep.reason:
        result.skip(("batch-leak", "causal-leak"), dep.reason)
        stage.done.update(RERUNS)
        return

    if deterministic:
        result.diagnostics.extend(_property(probe, result, "input-ignored",
                                            constant.inputs_ignored, probe, dep))
        result.diagnostics.extend(_property(probe, result, "attention-textbook",
                                            removed.inputs_removed, probe))
    result.causal_checkable = any(s.role.stream == "query" and s.role.time is not None
                                  for s in probe.sources()) or bool(probe.unembedded_tokens())
    mixing = dep.batch_leaks()
    if causal and dep.causal_leaks():
        _judged_streams(probe, dep, result)
    future = dep.causal_leaks() if causal else []
    located: dict[str, tuple[locate.Leak, locate.Run]] = {}
    wanted = {"batch": bool(mixing), "causal": bool(future)}
    side_ids = {id(p) for p in side}
    if mixing and not shuffle.mixing_samples([p for p in dep.pairs if id(p) not in side_ids]):
        # only an integer or boolean side input mixes samples: autograd cannot follow it
        found = shuffle.first_side_leak(probe, side)
        rec = _quietly(locate.first_cross_sample_change, probe, *found) if found else None
        if rec is not None:
            located["batch"] = (locate.Leak(rec, "batch", None), None)
    while any(want and kind not in located for kind, want in wanted.items()):
        # one run finds the first op of either kind; a second run looks for the other
        stage.check = "batch-leak" if wanted["batch"] and "batch" not in located else "causal-leak"
        found, run = _quietly(locate.dependency_leak, probe,
                              batch=wanted["batch"] and "batch" not in located,
                              causal=wanted["causal"] and "causal" not in located) or (None, None)
        if found is None:
            break
        located[found.kind] = (found, run)
    stage.check = "causal-leak"
    hidden = None  # a causal leak found inside when no output has a time axis to show it
    if causal and dep.time_grid is None and any(s.role.stream == "query" and s.role.time is not None
                                                for s in probe.sources()):
        hidden = _quietly(locate.dependency_leak, probe, batch=False, causal=True)
        if hidden is not None and hidden[0] is None:
            hidden = None
        elif hidden is not None and _pools_time(hidden[0], probe.T):
            # the first op to combine positions removes the time axis (a mean or max pooled
            # over T for a classifier) or weighs the positions for such a pooling (a softmax
            # over T with no second T axis): a pooled output has no position that could see a
            # later one. Attention among positions has a (T, T) grid of scores and is checked.
            hidden = None
            result.notes.append("causal-leak: no output has a time axis and the positions are "
                                "first combined by pooling over T, so there is no output position "
                                "that could see a later one")

    stage.check = "batch-leak"
    if mixing:
        leak = located.get("batch")
        result.diagnostics.append(messages.batch_mixing(probe, dep, mixing,
                                                        leak[0].rec if leak else None))
    elif probe.per_sample_state:
        state = ", ".join(f"`{n}`" for n in dict.fromkeys(probe.per_sample_state))
        why = (f"the module keeps per-sample state across calls ({state}), which a reordered "
               f"batch would not match")
        # batch-leak ran (which samples each output reads); only the reordering was left out
        result.skipped.append(f"batch-leak: whether outputs follow their sample when the batch "
                              f"is reordered was not checked, as {why}")
    elif deterministic:
        change, order = shuffle.reorder_change(probe, first)
        if change is None:
            result.skipped.append(f"batch-leak: whether outputs follow their sample when the "
                                  f"batch is reordered was not checked, as no output has one "
                                  f"axis of the batch's size {probe.B} (another axis is as long)")
        elif change > PERMUTATION_RTOL:
            reordered = shuffle.reordered_args(probe, order), shuffle.reordered_kwargs(probe, order)
            rec = _quietly(locate.first_difference, probe, order=order, reordered=reordered)
            result.diagnostics.append(messages.batch_position(probe, dep, change, rec))
    else:
        result.skipped.append("batch-leak: whether outputs follow their sample when the batch is "
                              "reordered was not checked, as two runs already differ")
    stage.done.add("batch-leak")

    stage.check = "causal-leak"
    if future:
        leak, run = located.get("causal", (None, None))
        mask = _quietly(inverted.inverted_mask, leak.rec if leak else None, run)
        result.diagnostics.append(messages.causal_leak(
            probe, dep.time_grid, dep, leak.rec if leak else None, run.records if run else (),
            inverted=mask))
    elif hidden is not None:
        leak, run = hidden
        result.diagnostics.append(messages.causal_leak(probe, leak.used, dep, leak.rec, run.records,
                                                       inside=True))
    elif causal is None and looks_causal(dep):
        result.causal_note = ("the module is causal in practice: "
                              "no output position depends on a later one")
        result.notes.append(result.causal_note)
