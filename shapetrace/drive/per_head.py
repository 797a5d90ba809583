"""Inputs read by what the module is sized by: a module sized by a head size alone takes
vectors of that many features (:func:`sized_per_head`)."""

from __future__ import annotations

import dataclasses

from ..base.specs import InputSpec


def sized_per_head(module, init, inputs, dims, request):
    """``(inputs, note)`` with the width of inputs guessed as vectors made the head size, for a
    constructor sized by a head size alone (``RoPE(theta, d_k, max_seq_len)``: its tables are
    built for vectors of d_k features, no argument is a model width); None otherwise."""
    from ..base.names import size_of

    if not isinstance(module, type) or not init or request.inputs is not None or "C" in dims.explicit:
        return None
    read = {size_of(name, constructor=True) for name, value in init.items()
            if type(value) is int and name not in (request.init or {})}
    sized = {name for name, value in init.items() if type(value) is int and value == dims["C"]}
    if "d" not in read or "C" in read or sized:
        return None
    guessed = [s for s in inputs if isinstance(s, InputSpec) and s.dtype == "float" and s.mask is None
               and s.dims and s.dims[-1] == "C"]
    if not guessed:
        return None
    made = tuple(dataclasses.replace(s, dims=(*s.dims[:-1], "d")) if s in guessed else s for s in inputs)
    names = ", ".join(s.name for s in guessed)
    note = (f"{names} read with d features: the constructor is sized by a head size alone (no "
            f"argument is a model width); give --input {guessed[0].name}=... to choose")
    return made, note
