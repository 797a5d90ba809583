"""Optional masks given with the meaning the code reads in them (``analysis.masks``: the one
reading of a mask's meaning, shared with the behaviour checks). Uses that disagree, or none the
reading knows, say nothing: the mask is then left out, as before.
"""

from __future__ import annotations

import dataclasses

from ..analysis.masks import mask_meaning

__all__ = ["mask_meaning", "with_meanings"]


def with_meanings(inputs: tuple, forward) -> tuple:
    """``inputs`` with each mask (``InputSpec.mask``) given the meaning ``forward`` reads in an
    argument of its name, where it reads one."""
    out = []
    for spec in inputs:
        meaning = mask_meaning(forward, spec.name) \
            if forward is not None and getattr(spec, "mask", None) else None
        if meaning is not None and meaning != spec.mask:
            spec = dataclasses.replace(spec, mask=meaning,
                                       dtype="float" if meaning == "add" else "bool")
        out.append(spec)
    return tuple(out)
