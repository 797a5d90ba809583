"""Whether a reference solution runs on the inputs shapetrace guessed: keys and values of a
length of their own, optional masks given.

Keys and values guessed as a sequence of their own (B, S, C) are read again at the queries'
length when the module fails where the two lengths meet (``plan.SourceLength``): right for a
module made for self-attention that takes them apart from the queries. When the course's
reference runs at T != S, the assignment is a cross-attention: a submission that fails there
has the bug (a reshape by T, a mask cut to (T, T)), and is not re-run at other sizes. Masks
guessed for an optional argument (``plan.GuessedMasks``) are left None after a failure only when
the reference does not run on them either.
"""

from __future__ import annotations

import warnings

import torch

from ..base.errors import ShapetraceError


def reference_runs(plan, args) -> bool:
    """Whether the plan's reference (``Request.reference``) runs on ``args``, the inputs an
    attempt of the plan was given (keys of their own length, the masks guessed); False when
    there is none or it cannot be built or run."""
    request = plan.request
    if request.reference is None or request.fake or not isinstance(request.module, type):
        return False
    from ..behaviour.runs import math_sdpa
    from .reference import _build_reference, resolve_reference

    try:
        reference = resolve_reference(request.reference, like=request.cls)
        model = _build_reference(reference, plan.init, plan.dims, request.seed)
        with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.eval()(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    except Exception:  # noqa: BLE001 - the reference needs other inputs too: no answer
        return False
    return True


def other_source_length(plan, other) -> bool:
    """Whether reading ``other`` gives keys and values another length than ``plan``'s:
    another S, or inputs sized by S read at T."""
    uses_s = [any(d == "S" for d in getattr(s, "dims", ())) for s in plan.inputs or ()]
    if not any(uses_s):
        return False
    if other.dims["S"] != plan.dims["S"]:
        return True
    return [any(d == "S" for d in getattr(s, "dims", ())) for s in other.inputs or ()] != uses_s


def assignment_masks(inputs: tuple, request) -> tuple:
    """Guessed masks read as the reference reads a mask of that name (the assignment's)."""
    from .masks import with_meanings
    from .reference import resolve_reference

    if request.reference is None or not any(getattr(s, "mask", None) for s in inputs):
        return inputs
    try:
        module = resolve_reference(request.reference, like=request.cls).module
    except ShapetraceError:
        return inputs
    return with_meanings(inputs, getattr(module if isinstance(module, type) else type(module),
                                         "forward", None))
