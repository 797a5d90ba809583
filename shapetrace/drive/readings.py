"""A plan's guesses read another way after a run that failed (or ran only by a reading that
cannot stand): the first reading that stands replaces it, with its notes.

Each guess of a plan (``plan.Guess``) names the readings of itself a failed attempt asks for
(``Plan.readings``); :func:`read_again` runs them in order, kept to one kind of guess where
asked (an image a per-channel scale lifted the guess to, rotary tables with one row per
position), and reads again the guesses a reading leaves open.
"""

from __future__ import annotations

from ..base.errors import TargetError, one_line
from .cross import other_source_length, reference_runs


def read_again(plan, chosen, run, notes: list[str], only: type | tuple | None = None):
    """The attempt of the first reading of ``plan``'s guesses (of the kind ``only``, all when
    None) that stands after ``chosen``, its notes added to ``notes``; ``chosen`` itself when none
    stands. ``run`` makes an attempt of a plan. A forward that runs at the size it asks for only
    by emptying an axis is a :class:`TargetError`: the sizes, not a bug."""
    emptied: list = []
    read = _reading(plan, chosen, run, emptied=emptied, only=only)
    if read is not None:
        chosen, read_notes = read
        notes.extend(dict.fromkeys(n for n in read_notes if n not in notes))
    elif emptied:
        raise TargetError(_emptied(chosen, emptied[0]))
    return chosen


def _reading(plan, failed, run, depth: int = 3, emptied: list | None = None,
             only: type | None = None):
    """``(attempt, notes)`` of the first reading of ``plan``'s guesses that stands after
    ``failed``; a reading that keeps other guesses open (a hidden size read as the width, whose
    inputs may still be read another way; heads put back to their default, whose head size may
    still have to be even) is read again, twice at most. None when none stands; the readings
    that ran but emptied an axis are added to ``emptied``; ``only``: the kind of guess whose
    readings are tried (all when None)."""
    cross = None  # whether the reference takes keys of their own length: asked once
    for other in plan.readings(failed):  # a guess read another way
        if only is not None and not isinstance(other.reading_of, only):
            continue
        if other_source_length(plan, other):
            if cross is None:
                cross = reference_runs(plan, failed.args)
            if cross:  # a cross-attention, as the reference shows: the failure stands
                continue
        try:
            again = run(other)
        except TargetError:  # a reading its constructor refuses: the first failure stands
            continue
        stands = other.accepts(again)
        if not stands and failed.passed_by is None and not again.ran and again.got_past(failed):
            failed.passed_by = other.note  # the failure moved with the guess (a reading that
            # runs and does not stand, pairing samples or emptying an axis, is refuted instead)
            failed.passed_to = again.failure_site()
        if not stands and again.ran and again.made_empty and emptied is not None:
            emptied.append(other)
        if depth > 1 and other.guesses and not again.ran:  # past its own guess or not, the
            deeper = _reading(other, again, run, depth - 1, emptied)  # rest still open
            if deeper is not None:  # a reading of the same guess again says it all
                again_of = deeper[0].plan.reading_of
                if getattr(other.reading_of, "restated", False) and type(again_of) is type(other.reading_of):
                    return deeper
                return deeper[0], [other.note, *deeper[1]]
            if failed.passed_by is None and again.passed_by is not None \
                    and again.failure_site() == failed.failure_site() is not None:
                # a reading that failed where the first did, and one of it that got past there
                failed.passed_by = f"{other.note.split(':')[0]}, then {again.passed_by}"
                failed.passed_to = again.passed_to
        if stands:
            return again, [other.note]
    return None


def _emptied(failed, other) -> str:
    """The target error for a forward that fails at the probe sizes and, at the size it asks
    for, runs only by emptying an axis (``x[:, n:]`` of ``n`` tokens)."""
    op = failed.failed_op
    where = f" at {op.op}" if op is not None else ""
    return (f"the forward failed{where} at the probe sizes ({one_line(failed.raised)}), and at "
            f"the size it asks for ({other.note.split(':')[0]}) it ran only by emptying an axis: "
            f"give the sizes it is meant for with --dims (or --init)")
