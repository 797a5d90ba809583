"""norm-epsilon: a normalisation whose epsilon is not a small number.

A norm divides by a statistic of its input plus an epsilon (``(x - mean) / sqrt(var + eps)``)
that only guards against dividing by zero: 1e-5, 1e-6, 1e-12. An epsilon of 1 or more (or a
flag, ``True``) is as large as the statistic it guards, so the output is no longer normalised:
its scale follows the input's. It comes from an argument in the wrong place:
``nn.LayerNorm(d, use_bias)`` puts ``use_bias`` where the epsilon goes (its second parameter),
``nn.BatchNorm1d(C, T)`` a length. Read from the trace: the epsilon each of torch's norms ran
with (layer, RMS, group, batch and instance norms, and ``F.normalize``'s floor on the norm).
The finding is at the line that built the norm when it is a layer (where the argument goes), the
call kept as where it took effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fixes import constructor_of
from .registry import diagnostic

if TYPE_CHECKING:
    from ..analysis.facts import Analysis

#: torch's norms and the position of their epsilon
_EPS_AT = {"F.layer_norm": 4, "torch.layer_norm": 4, "F.group_norm": 4, "torch.group_norm": 4,
           "F.batch_norm": 7, "F.instance_norm": 7, "F.rms_norm": 3, "F.normalize": 3}
#: where each of torch's norm layers takes its epsilon among its constructor's arguments
_LAYER_EPS = {"F.layer_norm": "second", "F.rms_norm": "second", "F.group_norm": "third",
              "F.batch_norm": "second", "F.instance_norm": "second"}
_PLACES = {"second": 1, "third": 2}


def check_epsilon(analysis: Analysis):
    seen: set = set()
    for rec in analysis.records_of(_EPS_AT):
        if rec.error is not None:
            continue
        eps = rec.arg(_EPS_AT[rec.op], "eps")
        flag = isinstance(eps, bool)
        if not (eps is True or (not flag and isinstance(eps, (int, float)) and eps >= 1)):
            continue
        built = constructor_of(rec) if rec.internal else None
        place = (rec.file, built.lineno) if built is not None else None
        key = place or (rec.file, rec.line)
        if key in seen:  # one layer called in a loop: one finding
            continue
        seen.add(key)
        given = f"{eps!r}" + (" (1.0)" if flag else "")
        what = "floor on the norm" if rec.op == "F.normalize" else "epsilon"
        layer = f" `{built.text}`" if built is not None else ""
        ordinal = _LAYER_EPS.get(rec.op)
        where = (f"; its {ordinal} positional argument is the epsilon, not a flag or a size"
                 if built is not None and ordinal is not None
                 and len(getattr(built.node, "args", ())) > _PLACES[ordinal] else "")
        message = (f"the norm{layer} runs with {what} {given}, as large as the statistic it "
                   f"guards: the output is not normalised (its scale follows the input's); an "
                   f"epsilon is a small number such as 1e-5{where}")
        hint = ("pass the flag by its name (`nn.LayerNorm(d, bias=use_bias)`, "
                "`elementwise_affine=...`) and leave eps at its default, or give a small eps "
                "(`eps=1e-5`)")
        yield diagnostic("norm-epsilon", message, hint, rec=rec, made_at=place, eps=float(eps))
