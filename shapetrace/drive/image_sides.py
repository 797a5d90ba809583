"""An image read at a side too small for the module's own downsampling.

An input read as an image is made at a side of shapetrace's (:data:`IMAGE_SIDE`, or what the
constructor says). A module that halves it four times and then takes a 5x5 kernel, or that
flattens a grid of a fixed size into a linear layer (``nn.Linear(hidden * 13 * 13, ...)``),
cannot run on it: the size, not a bug. When the forward on the image fails, larger sides are
tried in turn; one that runs stands, with a note.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from types import SimpleNamespace

from ..base.names import IMAGE_SIZES, PATCH_SIZES, unprefixed
from ..base.specs import InputSpec
from .guess import Guess

#: the height and width of an image read from a vector guess: divisible by 2, 4 and 8 (pooling,
#: patches), and no probe size
IMAGE_SIDE = 8


def image_side(init: dict) -> int:
    """The side of an image read from a vector guess: the constructor's own image size
    (``img_size=16``, ``image_size=(32, 32)``, a block's ``input_resolution``), else a
    multiple of its patch size, else
    :data:`IMAGE_SIDE`. A config object's fields count (``cfg.vit_img_size``)."""
    init = {**{unprefixed(k) or k: v for c in init.values() if isinstance(c, SimpleNamespace | dict)
               for k, v in (c if isinstance(c, dict) else vars(c)).items()}, **init}
    for name in (*IMAGE_SIZES, "input_resolution"):  # a block's grid of feature positions last
        value = init.get(name)
        if isinstance(value, (tuple, list)) and value and isinstance(value[0], int):
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 512:
            return value
    for name in PATCH_SIZES:
        value = init.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 64:
            return 2 * value
    return IMAGE_SIDE



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
            inputs = tuple(dataclasses.replace(spec, dims=(*spec.dims[:-2], side, side))
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
