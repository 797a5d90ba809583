"""What each positional input of a checked module is: its batch axis, its time axis, its stream.

``InputRole.from_axes("context", "B S C")`` builds a role from dimension names;
``infer_roles(inputs, dims)`` guesses every input's role from its sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..base.dims import Dims
from ..base.names import ENCODER_INPUTS


@dataclass(frozen=True)
class InputRole:
    """What one positional input of the module is.

    ``batch`` and ``time`` are axis indices (or None). ``stream`` is ``"query"`` for the
    stream that is time-aligned with the output, ``"context"`` for a second sequence
    (cross-attention source, axis S) that the causal check does not constrain. ``tokens``
    marks integer token ids: their dependencies are taken from the embedding outputs.
    """

    name: str = "x"
    batch: int | None = 0
    time: int | None = 1
    stream: str = "query"
    tokens: bool = False
    #: a mask's meaning as the user declared it (``"keep"``: True/1 = may attend, ``"drop"``:
    #: True/1 = masked out), which the code must follow; None when nothing was declared
    meaning: str | None = None

    def __post_init__(self):
        if self.stream not in ("query", "context"):
            raise ValueError(f"stream must be 'query' or 'context', got {self.stream!r}")

    @classmethod
    def from_axes(cls, name: str, axes: str | Sequence[str], *, tokens: bool = False) -> InputRole:
        """``InputRole.from_axes("context", "B S C")``: roles from dimension names."""
        names = axes.replace(",", " ").split() if isinstance(axes, str) else list(axes)
        batch = names.index("B") if "B" in names else None
        if "T" in names:
            return cls(name, batch, names.index("T"), "query", tokens)
        if "S" in names:
            return cls(name, batch, names.index("S"), "context", tokens)
        return cls(name, batch, None, "query", tokens)

    @property
    def is_constant(self) -> bool:
        """Neither a batch nor a time axis: held fixed (a shared mask, a scalar)."""
        return self.batch is None and self.time is None


def infer_roles(inputs: Sequence[Any], dims: Dims | None = None,
                names: Sequence[str] | None = None) -> list[InputRole | None]:
    """Guess each input's role from its sizes: the axis of size B is the batch axis, an axis of
    size T the time axis (query stream), else an axis of size S (context stream). Integer
    tensors with a batch and a time axis are tokens; a tensor without a batch axis is shared
    by all samples and held fixed. Non-tensors get None. An input named as a source sequence
    (``src`` beside ``tgt``, ``memory``) is a context stream whatever its length."""
    dims = dims or Dims()
    roles: list[InputRole | None] = []
    for i, value in enumerate(inputs):
        if not isinstance(value, Tensor):
            roles.append(None)
            continue
        given = names[i] if names and i < len(names) else None
        shape = list(value.shape)
        batch = shape.index(dims["B"]) if dims["B"] in shape else None
        if batch is None:  # shared by every sample (a (T, T) mask, a table): held fixed
            roles.append(InputRole(given or f"input {i}", None, None))
            continue
        rest = [j for j in range(len(shape)) if j != batch]
        time = next((j for j in rest if shape[j] == dims["T"]), None)
        stream = "query"
        if time is None:
            time = next((j for j in rest if shape[j] == dims["S"]), None)
            stream = "context" if time is not None else "query"
        tokens = (not value.is_floating_point() and value.dtype != torch.bool
                  and not value.is_complex() and time is not None)
        default = ("idx" if tokens else "x") if i == 0 else f"input {i}"
        roles.append(InputRole(given or default, batch, time, stream, tokens))
    return _sources_as_context(roles)


def _sources_as_context(roles: list[InputRole | None]) -> list[InputRole | None]:
    """An input named as a source sequence (``src`` beside ``tgt``) is a context stream when
    another input is time-aligned with the output: a translation model's output position 0
    legitimately reads every source position."""
    queries = [r for r in roles if r is not None and r.stream == "query" and r.time is not None]
    sources = [r for r in queries if r.name.lower() in ENCODER_INPUTS]
    if not sources or len(sources) == len(queries):
        return roles
    return [InputRole(r.name, r.batch, r.time, "context", r.tokens) if r in sources else r
            for r in roles]
