"""The target error of a run whose guessed inputs did not fit: what it says, and how it asks.

A forward that failed on what shapetrace guessed says nothing of the code: the target becomes
an error naming the guess, asking for the inputs (``--input NAME=DIMS``), with no findings.
"""

from __future__ import annotations

from ..base.errors import one_line
from ..base.source import at_site
from ..report.results import TargetResult
from .attempt import Attempt
from .plan import ANNOTATED_AXIS


def annotated_axis_failed(result: TargetResult, chosen: Attempt) -> bool:
    """A forward that failed at inputs with an axis only its annotation names, sized by
    shapetrace (``text: Float['b n dt']``, where ``dt`` must be the constructor's ``dim_text``):
    the size was a guess, so the failure is a target error naming it, never a finding."""
    if chosen.ran:
        return False
    sized = [note.split(":")[0] for note in chosen.plan.read_notes if ANNOTATED_AXIS in note]
    if not sized:
        return False
    return ask(result, f"the forward failed ({why(chosen)}) with "
                        f"{', '.join(sized)}, a size shapetrace chose for an axis only forward's "
                        f"annotation names", f"--dims {sized[0].split('=')[0]}=SIZE")


def got_past(result: TargetResult, chosen: Attempt) -> None:
    """A target error about a guess that did not fit says how far a reading of it got (read as
    an image, the forward got past the line that refused the guess and failed at another)."""
    if result.error and chosen.passed_by is not None and chosen.passed_to is not None:
        reading = chosen.passed_by.split(":")[0]
        result.error += f"; with {reading}, it got further and failed at {chosen.passed_to}"


def ask(result: TargetResult, what: str, example: str | None = None, tail: str = "") -> bool:
    """``result`` made the target error ``what``, asking for the inputs (``example``: one
    ``--input`` that fits), with no findings from the guess that did not fit."""
    result.error = (f"{what}; give forward's inputs with --input NAME=DIMS (or inputs in the "
                    f"config){tail}" + (f", e.g. {example}" if example else ""))
    result.diagnostics = []
    return True


def why(chosen: Attempt) -> str:
    """What the forward raised, and where: ``RuntimeError: ... at attention.py:12``."""
    raised = chosen.raised
    if raised is None:
        return "it failed"
    at = at_site(chosen.raised_at)
    return f"{type(raised).__name__}: {one_line(raised)[:140]}{at}"
