"""An image read at a side too small for the module's own downsampling.

An input read as an image is made at a side of shapetrace's (``plan.IMAGE_SIDE``, or what the
constructor says). A module that halves it four times and then takes a 5x5 kernel, or that
flattens a grid of a fixed size into a linear layer (``nn.Linear(hidden * 13 * 13, ...)``),
cannot run on it: the size, not a bug. When the forward on the image fails, larger sides are
tried in turn; one that runs stands, with a note.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.specs import InputSpec
from .guess import Guess

#: the sides tried after the first, in order
SIDES = (32, 64)


@dataclass(frozen=True)
class ImageSide(Guess):
    """``names``: inputs read as square images at ``side``."""

    names: tuple[str, ...]
    side: int

    def read_by(self, failed, plan) -> bool:
        return not failed.ran

    def others(self, plan, failed) -> Iterator:
        for side in SIDES:
            if side <= self.side:
                continue
            inputs = tuple(dataclasses.replace(spec, dims=(*spec.dims[:2], side, side))
                           if isinstance(spec, InputSpec) and spec.name in self.names else spec
                           for spec in plan.inputs)
            names = ", ".join(self.names)
            note = (f"{names} read at {side}x{side}: at {self.side}x{self.side} the forward failed "
                    f"({_why(failed)}); give --input {self.names[0]}=B,C,H,W to choose")
            yield dataclasses.replace(plan, inputs=inputs, guesses=(), note=note,
                                      reading_of=self)


def _why(failed) -> str:
    op = failed.failed_op
    return f"at {op.op}" if op is not None else type(failed.raised).__name__
