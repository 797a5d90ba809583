"""A recurrent layer's state handed in by the caller, read at the shape the layer asks for.

``output, hidden = self.gru(embedded, hidden)``: the state is ``(layers * directions, batch,
hidden size)``, which no name says (``hidden`` is guessed a sequence). torch's recurrent layers
say the shape they expected when they refuse one (``Expected hidden size (2, 5, 143), got [7, 5,
143]``): the input of the refused shape is read at the expected one, each size a probe size's
name where it is one (the batch, the width), its number otherwise (the layers).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.specs import InputSpec
from .guess import Guess

#: what nn.RNN, nn.GRU and nn.LSTM say of a state of another shape
_EXPECTED = re.compile(r"Expected hidden(?:\[\d\])? size \(([\d, ]+)\), got \[([\d, ]+)\]")


@dataclass(frozen=True)
class RecurrentState(Guess):
    """``names``: float inputs guessed from their names, one of which may be a recurrent
    layer's state. The reading stands only if the forward then runs."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return self._read(failed, plan) is not None

    def others(self, plan, failed) -> Iterator:
        read = self._read(failed, plan)
        if read is None:
            return
        name, dims = read
        inputs = tuple(dataclasses.replace(s, dims=dims) if isinstance(s, InputSpec) and s.name == name
                       else s for s in plan.inputs)
        shown = ", ".join(str(d) for d in dims)
        note = (f"{name} read as a recurrent layer's state, ({shown}): the layer asked for that "
                f"shape; give --input {name}=... to choose")
        rest = tuple(g for g in plan.guesses if g is not self)
        yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)

    def _read(self, failed, plan) -> tuple[str, tuple] | None:
        found = _EXPECTED.search(str(failed.raised)) if failed.raised is not None else None
        if found is None:
            return None
        expected, got = ([int(n) for n in g.split(",") if n.strip()] for g in found.groups())
        name = next((n for n, arg in zip(failed.names, failed.args)
                     if n in self.names and list(getattr(arg, "shape", ())) == got), None)
        if name is None:
            return None
        values = list(plan.dims.values())
        by_size = {v: k for k, v in plan.dims.items() if values.count(v) == 1}
        return name, tuple(by_size.get(n, n) for n in expected)
