"""A count shapetrace chose for a constructor argument that a view shows to be a number of
positions: ``self.latents = nn.Parameter(torch.empty(num_features, k, d))`` used as a batch of
queries beside the positions of the input, ``view(batch_size, ...)`` with ``batch_size`` taken
from the latents. The view's element count says what the count must be: as many as the
positions (T, T - 1 without a leading class token, T + 1 with one, or the source's S)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.names import size_of
from .asked import VIEW_FAILED
from .guess import Guess

#: the ops that ask for a shape
_VIEWS = frozenset({"Tensor.view", "Tensor.reshape", "torch.reshape"})


@dataclass(frozen=True)
class ViewedCount(Guess):
    """``chosen``: ``(name, value)`` of the constructor's integers shapetrace chose."""

    chosen: tuple[tuple[str, int], ...]

    def read_by(self, failed, plan) -> bool:
        return bool(self._asked(failed, plan))

    def others(self, plan, failed) -> Iterator:
        rest = tuple(g for g in plan.guesses if g is not self)
        for name, value, size, what in self._asked(failed, plan):  # two of one value: each tried
            op = failed.failed_op
            note = (f"{name}={size}, {what}, as {op.op} at line {op.line} asks (as {value} it "
                    f"did not fill it); give --init {name}=VALUE to choose")
            yield dataclasses.replace(plan, init={**plan.init, name: size}, guesses=rest, note=note,
                                      reading_of=self)

    def _asked(self, failed, plan):
        """``[(name, value, size, what)]``: each chosen argument whose value the failed view's
        shape holds once, and the number of positions its element count asks for in its place."""
        op = failed.failed_op
        if op is None or op.op not in _VIEWS or op.error is None:
            return []
        found = VIEW_FAILED.search(op.error[1] or "")
        if found is None:
            return []
        target = [int(n) for n in found.group(1).split(",") if n.strip()]
        numel = int(found.group(2))
        if -1 in target or 0 in target:
            return []
        dims = plan.dims
        positions = {}
        for name in ("T", "S"):
            if name in dims:
                positions.setdefault(dims[name], f"the positions ({name})")
                positions.setdefault(dims[name] - 1, f"the positions but the first ({name} - 1)")
                positions.setdefault(dims[name] + 1, f"the positions and one more ({name} + 1)")
        others = set(dims.values()) - {dims.get("T"), dims.get("S")}  # sizes no count is read as
        wanted = math.prod(target)
        matches = []
        for name, value in self.chosen:
            if target.count(value) != 1 or value in (dims.get("B"), dims.get("T"), dims.get("S"), dims.get("L")):
                continue  # a maximum length viewed as the length is the code's bug (block_size for T)
            rest = wanted // value
            if numel % rest == 0 and (size := numel // rest) in positions and size not in others:
                matches.append((name, value, size, positions[size]))
        # a name that states the width (``d_model``) is the width: tried last
        return sorted(matches, key=lambda m: size_of(m[0]) is not None)
