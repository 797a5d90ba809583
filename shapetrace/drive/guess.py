"""What every guess of a plan answers: whether a failed attempt read it, and its other
readings (``drive.plan``)."""

from __future__ import annotations

from collections.abc import Iterator


class Guess:
    """A value shapetrace chose. ``read_by`` says whether the failure of an attempt
    (``attempt.failed_op``, the op that raised; ``attempt.raised``) read it; ``others`` are the
    plans with its other readings. ``after_another_input``: whether it stays open in a plan
    that read another input otherwise (a style vector per sample, beside data read channels
    first)."""

    after_another_input = False
    #: whether a reading of this guess read again the same way says all the first one did
    #: (``drive.readings`` then keeps the last note only)
    restated = False

    def read_by(self, failed, plan) -> bool:
        raise NotImplementedError

    def others(self, plan, failed) -> Iterator:
        raise NotImplementedError

    def settled_by(self, attempt, plan) -> bool:
        """Whether an attempt of ``plan`` (this guess read another way) that failed all the
        same failed for another reason than this guess (the user's own bug, reported then)."""
        return False

    def stands(self, attempt, plan) -> bool:
        """Whether an attempt of ``plan`` (this guess read another way) that ran may stand: a
        reading can ask more of the run than that it ran."""
        return True
