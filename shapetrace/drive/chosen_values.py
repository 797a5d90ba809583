"""Constructor values shapetrace chose that the code's own sizes refuse.

A value nothing sets is chosen (a window's side 4, a count 2, a length made from another): when
the forward then fails at an op whose sizes that value made (a size below zero, two sizes that
do not meet), the failure says nothing of the code. A value made it when the module built with
that value alone set otherwise runs, or fails at the same op with other sizes; the run is then a
target error naming the value, never a finding.
"""

from __future__ import annotations

import re
import types

import torch

from ..base.errors import one_line
from ..base.source import at_line
from ..report.results import TargetResult
from .asked import INNER, MET
from .attempt import Attempt
from .infer import BUILT_WITH
from .init_reads import read_by_use


#: what torch says of a size below zero (-1 in a view is "infer this one", not such a size)
_NEGATIVE = re.compile(r"negative dimension|invalid shape dimension -\d|negative size|"
                       r"must be non-?negative", re.I)
#: the constructor values chosen by shapetrace that are tried another way, at most
_TRIED = 4


def negative_size(result: TargetResult, chosen: Attempt) -> bool:
    """An op asked for a size below zero that a constructor value shapetrace chose made
    (``seq_len + 1 - image_size ** 2`` with ``seq_len`` chosen): the values chosen do not fit
    the code's own, which says nothing of the code. A value made it when the module built
    with that value alone set otherwise runs, or fails at the same op asking another size. A
    size below zero that no chosen value moves (made from the inputs alone) stays a finding."""
    rec = chosen.failed_op
    text = rec.error[1] if rec is not None and rec.error else ""
    plan = chosen.plan
    if not _NEGATIVE.search(text) or plan.init is None:
        return False
    given = set(plan.request.init or ())
    values = [((k,), v) for k, v in plan.init.items()
              if k not in given and type(v) is int and v > 0]
    return _refused(result, chosen, values, lambda value: (
        f"asked {rec.op}{at_line(rec.file, rec.line)} for a size below zero "
        f"({one_line(text)[:120]})"))


def chosen_size_failed(result: TargetResult, chosen: Attempt) -> bool:
    """Two sizes that did not meet at an op, one of them a constructor value shapetrace chose
    and no probe size (a window's side guessed 4 for a table of ``win_size`` x ``win_size``
    distances that the scores of a sequence divide; a maximum length L met by T is the
    code's), of the module or of a module it built for one of its arguments
    (``AttentionLayer(attention=AnomalyAttention(win_size=4, ...))``): the value does not fit
    the code's own sizes, which says nothing of the code. The value made it when the module
    built with that value set otherwise runs, or fails at the same op with other sizes; a
    mismatch no chosen value moves stays a finding. At a linear layer (``mat1 and mat2 shapes
    cannot be multiplied``) only a count of positions met there says so: a chosen value met by
    the width is the classic wrong ``in_features``, a finding. A value the plan read as a probe
    size only from the layer it is handed to (``field_size`` as the width) counts as chosen."""
    rec = chosen.failed_op
    text = (rec.error[1] or "") if rec is not None and rec.error else ""
    found = MET.search(text)
    plan = chosen.plan
    if found is None and (inner := INNER.search(text)) is not None \
            and {plan.dims.get("T"), plan.dims.get("S")} & {int(inner.group(1)), int(inner.group(2))}:
        found = inner  # a linear layer's inputs met by a count of positions, never by the width
    if found is None or plan.init is None:
        return False
    sizes = {int(found.group(1)), int(found.group(2))}
    given = set(plan.request.init or ())
    probe = set(plan.dims.values())  # a value read as a probe size (C, L) is the code's meaning
    read = read_by_use(plan.read_notes)  # ... unless only the layer it is handed to said which size
    values = [((k,), v) for k, v in plan.init.items()
              if k not in given and _chosen_int(v) and v in sizes and (v not in probe or k in read)]
    for k, built in plan.init.items():  # the arguments of a module built for an argument
        inner = BUILT_WITH.get(built) if k not in given and isinstance(built, torch.nn.Module) else None
        values += [((k, name), v) for name, v in (inner or {}).items()
                   if _chosen_int(v) and v in sizes and v not in probe]
    return _refused(result, chosen, values, lambda value: (
        f"met a size of {next(iter(sizes - {value}), None)} at {rec.op}"
        f"{at_line(rec.file, rec.line)} ({one_line(rec.error[1])[:120]})"))


def counted_failed(result: TargetResult, chosen: Attempt) -> bool:
    """Any failure of the forward that a count shapetrace gave a config's field moves (a
    field the code only adds or multiplies, ``cfg.observation_dim``, given
    :data:`~.config_fields.COUNT`): the count does not fit the code's own sizes, which says
    nothing of the code; a target error naming the field."""
    from .config_fields import COUNT

    rec = chosen.failed_op
    plan = chosen.plan
    if rec is None or not rec.error or plan.init is None:
        return False
    given = set(plan.request.init or ())
    values = [((k, name), v) for k, config in plan.init.items()
              if k not in given and isinstance(config, types.SimpleNamespace)
              for name, v in vars(config).items() if _chosen_int(v) and v == COUNT]
    return _refused(result, chosen, values, lambda value: (
        f"failed at {rec.op}{at_line(rec.file, rec.line)} ({one_line(rec.error[1])[:120]})"))


def _refused(result: TargetResult, chosen: Attempt, values: list, what) -> bool:
    """The target error for the first of ``values`` (``(argument path, value)``, at most
    :data:`_TRIED` tried) that moves the failure (``_moves``): the module built with it, and
    ``what(value)`` the failing op said of it; False when none moves it."""
    made_by = next(((path, v) for path, v in values[:_TRIED]
                    if _moves(chosen, chosen.failed_op, path, 2 * v + 1)), None)
    if made_by is None:
        return False
    path, value = made_by
    result.error = (f"{type(chosen.model).__name__} built with {'.'.join(path)}={value}, a value "
                    f"shapetrace chose, {what(value)}: that value does not fit the code's own "
                    f"sizes; give the constructor's arguments with --init NAME=VALUE (or init in "
                    f"the config)")
    result.diagnostics = []
    return True


def _chosen_int(value) -> bool:
    return type(value) is int and not isinstance(value, bool)


def _moves(chosen: Attempt, failed, path: tuple[str, ...], other: int) -> bool:
    """Whether the module built with ``other`` at ``path`` (everything else as chosen) runs its
    forward on the same inputs, or fails at the op that failed (its line) with other
    arguments or another error (other sizes): the failure moved with the value. ``path``:
    ``(argument,)``, or ``(argument, its module's argument)`` for a module built for an
    argument."""
    from ..report.trace import Trace
    from .devices import cpu_only

    try:
        with cpu_only([]):  # built and run as the attempt was: .cuda() left on the CPU
            init = dict(chosen.plan.init)
            if len(path) == 1:
                init[path[0]] = other
            elif isinstance(init[path[0]], types.SimpleNamespace):  # a config's field
                init[path[0]] = types.SimpleNamespace(**{**vars(init[path[0]]), path[1]: other})
            else:
                inner = init[path[0]]
                init[path[0]] = type(inner)(**{**BUILT_WITH[inner], path[1]: other})
            model = chosen.plan.request.cls(**init).eval()
    except Exception:  # noqa: BLE001 - a constructor that refuses the other value: no answer
        return False
    trace = Trace(model, dims=chosen.plan.dims, rules=False)
    try:
        with torch.no_grad(), cpu_only([]), trace:
            model(*chosen.args)
    except Exception:  # noqa: BLE001 - the user's code failing (the question asked of it)
        again = next((r for r in reversed(trace.records) if r.error is not None), None)
        return again is not None and again.op == failed.op and again.line == failed.line \
            and again.file == failed.file and (again.args != failed.args or again.error != failed.error)
    return True
