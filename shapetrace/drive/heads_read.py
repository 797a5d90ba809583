"""Queries, keys and values guessed from their names as sequences (B, T, C) that the forward
takes with their heads split, (B, H, T, d): a function of attention over heads (an ``Attend``
given ``q, k, v``) says so when it fails on three axes where its code wants four (an einsum of
four subscripts, an einops pattern of four axes, four sizes unpacked from one). Which axis holds
the heads is a guess (batch, heads, sequence, head size, as SDPA takes them): the run's
layout-dependent findings stay warnings that say so (``drive.layout.assume_layout``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.specs import InputSpec
from .guess import Guess
from .signals import takes_images

#: what torch's einsum says of an operand with another number of axes than its subscripts
_SUBSCRIPTS = re.compile(r"number of subscripts in the equation \((\d+)\) does not match the "
                         r"number of dimensions \((\d+)\)")
#: the layout read, per length
SPLIT = {"T": ("B", "H", "T", "d"), "S": ("B", "H", "S", "d")}


@dataclass(frozen=True)
class HeadInputs(Guess):
    """``names``: the queries, keys and values guessed (B, T, C) or (B, S, C)."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        if takes_images(failed.model):
            return False
        found = _SUBSCRIPTS.search(str(failed.raised)) if failed.raised is not None else None
        wants_four = found is not None and found.group(1) == "4" and found.group(2) == "3" \
            and failed.failed_op is not None and failed.reads_input(failed.failed_op, self.names)
        return wants_four or failed.pattern_wants(4, self.names) or failed.unpacked(4, self.names)

    def others(self, plan, failed) -> Iterator:
        inputs = tuple(dataclasses.replace(s, dims=SPLIT[s.dims[1]])
                       if isinstance(s, InputSpec) and s.name in self.names and len(s.dims) == 3
                       and s.dims[1] in SPLIT else s for s in plan.inputs)
        names = ", ".join(self.names)
        note = (f"{names} read with their heads split, (B, H, T, d): as (B, T, C) "
                f"{'they' if len(self.names) > 1 else 'it'} did not have the four axes the "
                f"forward wants; give --input {self.names[0]}=B,H,T,d (or another order) to choose")
        yield dataclasses.replace(plan, inputs=inputs, guesses=(), note=note, reading_of=self)
