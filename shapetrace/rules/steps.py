"""Findings over a run of many steps (``record.steps``): the step each finding was first seen
at, and the NaN and Inf the run's value checks saw between the steps the trace recorded.

A finding in the records of a step kept as a kind of its own (the last, smaller batch; an eval
step) says at which step it was seen. The value checks (a forward's output, the gradients an
optimizer is about to use, the parameters it has just updated) make one non-finite finding: at
the first of them, what the probes found where it was made when the forward was recorded or run
again (the op that overflowed, not the softmax downstream), followed by what became of it.
"""

from __future__ import annotations

from .registry import diagnostic

_SHOWN = 3  # parameter names given by name; the rest are counted


def over_steps(diagnostics: list, runs: list, events: list, analysis, skip=()) -> list:
    """``diagnostics`` with the step each was seen at, and the value checks' finding."""
    out = list(diagnostics)
    for d in out:
        run = _run_of(runs, d.record)
        if run is None:
            continue
        d.data["step"] = run.first
        if run.rerun:
            d.message = f"at step {run.first} (its forward run again to find where): {d.message}"
        elif run.first > 1:
            d.message = f"at step {run.first}: {d.message}"
    if events and "non-finite" not in skip:
        out = _values(out, runs, events)
    return out


def _run_of(runs: list, record: int | None):
    if record is None or record < 0:
        return None
    for run in runs:
        if run.start <= record < run.end:
            return run
    return None


def _names(names: tuple) -> str:
    shown = ", ".join(names[:_SHOWN])
    more = len(names) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _sentence(event) -> str:
    """What an event after the first says, as a sentence that follows it."""
    if event.kind == "forward":
        return f"At step {event.step} the model's output held {event.what}."
    if event.kind == "gradients":
        return (f"The gradients of optimizer step {event.optimizer_step} ({event.optimizer}) "
                f"held {event.what}: {_names(event.names)}.")
    return (f"After optimizer step {event.optimizer_step} ({event.optimizer}) the parameters "
            f"held {event.what}: {_names(event.names)}.")


def _values(out: list, runs: list, events: list) -> list:
    found = next((d for d in out if d.rule == "non-finite"), None)
    if found is not None:  # the probes saw where it was made: what became of it follows
        step = found.data.get("step")
        then = " ".join(_sentence(e) for e in events
                        if not (e.kind == "forward" and e.step == step))
        if then:
            found.message = f"{found.message}. {then}"
        found.data["value_events"] = [_event_data(e) for e in events]
        return out
    first = events[0]
    then = " ".join(_sentence(e) for e in events[1:])
    if first.kind == "forward":
        message = (f"at step {first.step} the model's output holds {first.what}, and no op of its "
                   f"forward made it from finite values: it came in with the inputs or the "
                   f"parameters")
        hint = ("Check the batch of that step for NaN and Inf, and the parameters: "
                "torch.isfinite(t).all() on each.")
    elif first.kind == "gradients":
        message = (f"at step {first.step} the gradients of optimizer step {first.optimizer_step} "
                   f"({first.optimizer}) hold {first.what} while the model's output was finite: "
                   f"the loss, or the backward through it, made them ({_names(first.names)})")
        hint = ("Look at the loss of that step (a log of 0, a division by 0), or clip the "
                "gradients: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).")
    else:
        message = (f"after optimizer step {first.optimizer_step} ({first.optimizer}) the "
                   f"parameters hold {first.what} ({_names(first.names)})")
        if first.finite_gradients:
            message += ", though no gradient it was given held one"
        hint = ("Lower the learning rate or clip the gradients "
                "(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)).")
    if then:
        message = f"{message}. {then}"
    made = diagnostic("non-finite", message, hint, record=-1, kind=first.what, step=first.step,
                      value_events=[_event_data(e) for e in events])
    return [made, *out]


def _event_data(event) -> dict:
    data = {"kind": event.kind, "what": event.what, "step": event.step,
            "optimizer_step": event.optimizer_step}
    if event.optimizer:
        data["optimizer"] = event.optimizer
    if event.names:
        data["parameters"] = list(event.names)
    return data
