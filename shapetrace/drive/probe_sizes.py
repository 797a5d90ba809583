"""The probe sizes as a guess of the plan (``drive.plan``): read again at the size a failed run
asks for (``drive.resized``), or moved off a size of the module's own (``drive.own_sizes``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from .asked import INNER, MET, VIEW_FAILED, raised_by_check
from .guess import Guess
from .own_sizes import probe_off_own_size
from .resized import resized


@dataclass(frozen=True)
class ProbeSizes(Guess):
    """The probe sizes themselves, chosen by shapetrace: odd primes, and a sequence length of
    its own. A module may need another: rotary positions pair a head's features (an even head
    size: ``view(..., -1, 2)``), a sequence folded back into a grid must be as long as the grid
    (``view(B, C, H, W)`` with ``H*W`` tokens). When the forward fails at a view or reshape that
    asks for such a size, the size it asks for is tried.

    ``replan``: ``plan.replanned``, the plan made again at other sizes. ``by_check``: this is a
    reading the module's own check asked for (``assert head_dim % 2 == 0``): a forward that gets
    past the check and fails at an op on sizes the probe sizes make fails on the code's own."""

    free: frozenset  # the names the caller did not give
    replan: object = None
    by_check: bool = False

    def read_by(self, failed, plan) -> bool:
        return probe_off_own_size(failed, plan, self.free) is not None \
            or self._resized(failed, plan) is not None

    def others(self, plan, failed) -> Iterator:
        moved = probe_off_own_size(failed, plan, self.free)
        name, size, why = moved or self._resized(failed, plan)
        sizes = {name: size}
        if name == "C":  # heads that divide the width the code fixes
            heads = plan.dims["H"] if size % plan.dims["H"] == 0 else \
                next(h for h in (8, 4, 2, 1) if size % h == 0 and (h < size or h == 1))
            sizes.update(H=heads, d=size // heads)
        again = self.replan(plan, sizes)
        if again is None:
            return
        note = f"{name}={size}, {why}: give --dims {name}=... to choose"
        # a width the code fixes may come with a length it fixes too (a 512-wide table of 200
        # rows added uncut): the sequence length stays open to one more reading; a size moved
        # off one of the module's own stays open to the readings it may meet next
        rest = (dataclasses.replace(self, free=self.free & {"T", "S"}),) \
            if name == "C" and "T" in self.free else \
            tuple(dataclasses.replace(self, free=self.free - ({name} if moved is None else set()))
                  if isinstance(g, ProbeSizes) else g for g in again.guesses)  # the rest, anew
        checked = moved is None and raised_by_check(failed.raised_at)
        yield dataclasses.replace(again, guesses=rest, note=note,
                                  reading_of=dataclasses.replace(self, by_check=checked))

    def settled_by(self, attempt, plan) -> bool:
        """A size the module's own check asked for, and a failure past it at an op whose sizes
        the probe sizes make (``7`` against ``77``, T against T*H): the code's own."""
        op = attempt.failed_op
        if not self.by_check or op is None or op.error is None:
            return False
        text = op.error[1] or ""
        values = {v for v in plan.dims.values() if v > 1}
        found = MET.search(text) or INNER.search(text)
        if found is not None:
            sizes = [int(n) for n in found.groups()]
        elif (view := VIEW_FAILED.search(text)) is not None:  # the view's own numbers count
            target = [int(n) for n in view.group(1).split(",") if n.strip() not in ("", "-1")]
            sizes, values = [int(view.group(2))] + target, values | {n for n in target if 1 < n <= 4}
        else:
            return False
        return all(_of_probes(n, frozenset(values)) for n in sizes)

    def _resized(self, failed, plan):
        return resized(failed, plan, self.free)


def _of_probes(size: int, values: frozenset, depth: int = 5) -> bool:
    """Whether ``size`` is 1 or a product of at most ``depth`` of ``values`` (probe sizes)."""
    return size == 1 or depth > 0 and any(size % v == 0 and _of_probes(size // v, values, depth - 1)
                                          for v in values)
