"""A constructor that refuses the probe sizes: the plan again at sizes it can be built at.

The probe sizes are odd primes (a head size of 13, a width of 143), so that every axis has a
name. A constructor that takes features in pairs (a sinusoidal table, ``assert dim % 2 == 0``),
in fours (axial rotary frequencies viewed as ``(dim // 4, n_heads)``), or a number of heads that
must divide a count of its own refuses them: that says nothing of the code. The plan is made
again at a head size of :data:`~shapetrace.drive.asked.EVEN_HEAD_SIZE` (or the count asked for),
or with the sizes its own check asks to divide or equal each other, with a note; a constructor
that fails there too fails as it did.
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
import math
import re

from ..base.dims import Dims
from ..base.errors import TargetError, UsageError, one_line
from ..base.source import innermost_user_frame, user_frame
from .asked import (DIVISOR_ASKED, EVEN_ASKED, EVEN_HEAD_SIZE, MET, VIEW_FAILED, count_multiple,
                    numbers_in, raised_by_check, square_asked, width_multiple)
from .plan import Plan, Request, make_plan


def even_width(plan: Plan, failed: TargetError) -> Plan:
    """``plan`` at an even width (head size :data:`EVEN_HEAD_SIZE`) when its constructor
    refused the odd one (``failed``): sinusoidal tables fill even and odd features in pairs
    (a ``pe[:, 0::2]`` of C//2 + 1 columns meets C//2), an ``assert dim % 2 == 0``. Raises
    ``failed`` when nothing says the width was the reason, or the caller chose the sizes."""
    dims, cause = plan.dims, failed.__cause__
    if (fewer := _fewer_heads(plan, failed)) is not None:
        return fewer
    site = user_frame(cause) if cause is not None else None
    line = _inlined(linecache.getline(site[0], site[1]), cause) if site else ""  # its failing line
    free = {"H", "d", "L", "T"} - set(dims.explicit)  # a size the constructor's check asks for
    if cause is not None and plan.init is not None and (count := count_multiple(
            str(cause), dims, free) or square_asked(cause, dims, free)) is not None:
        again = _at_sizes(plan.request, dims, **{count[0]: count[1]})
        return dataclasses.replace(again, note=f"{count[0]}={count[1]}: the constructor asks for "
                                   f"{count[2]}; give --dims {count[0]}=... to choose")
    if cause is not None and plan.init is not None \
            and (checked := _checked_sizes(plan, cause, site, line)) is not None:
        return checked
    if cause is None or plan.init is None or {"C", "d"} & set(dims.explicit) or dims["C"] % 2 == 0:
        raise failed
    text = str(cause)
    half = dims["C"] // 2
    width = str(dims["C"])
    widths = [k for k, v in plan.init.items() if v == dims["C"]]  # the arguments set to C
    # "divisible by 2" of the width, or of no size it names ("Embedding dim must be even",
    # the head size of a rotary table)
    asked = (EVEN_ASKED.search(text) and (re.search(rf"\b{width}\b", text)
                                          or not numbers_in(text) - {2})) or (
        EVEN_ASKED.search(line) and any(re.search(rf"\b{re.escape(k)}\b", line) for k in widths))
    multiple = width_multiple(text, dims["C"])  # a divisor asked of a size built from C
    size = multiple or EVEN_HEAD_SIZE
    checked = "%" in line and raised_by_check(site)  # its own divisibility check refused C
    # a loop over the features in pairs (pe[pos, i + 1] for i in range(0, d_model, 2)) that
    # stepped one past the odd width
    overrun = re.search(rf"\bindex {width} is out of bounds for dimension \d+ with size {width}\b", text)
    # its own tensors made at these sizes do not fit each other (a table of n_heads * dim // 4
    # frequencies viewed as (dim // 4, n_heads)): sizes an odd head size leaves uneven
    uneven = isinstance(cause, RuntimeError) and (VIEW_FAILED.search(text) or MET.search(text))
    kept = _frame_divisor(cause, dims["C"]) if multiple is None and _DIVISIBLE.search(text) else None
    if kept is not None:  # a count the width must divide by, read where the check raised
        size = dims["d"]
        while (dims["H"] * size) % kept:
            size += 1
        multiple = kept
    if multiple is None and not (asked or checked or overrun or uneven or (
            re.search(rf"\b{half}\b", text) and re.search(rf"\b{half + 1}\b", text))):
        raise failed
    again = _at_sizes(plan.request, dims, d=size)
    divisor = DIVISOR_ASKED.search(text) if multiple is not None else None
    why = f"a width divisible by {kept} (a count its check divides it by)" if kept and kept != 2 \
        else f"a width divisible by {divisor.group(1)}" if divisor and divisor.group(1) != "2" \
        else "an even width" if not uneven or asked or checked or overrun else \
        f"a rounder head size than {dims['d']} ({type(cause).__name__}: {one_line(text)[:80]})"
    return dataclasses.replace(again, note=f"C={again.dims['C']} (head size d={size}): the "
                               f"constructor needs {why}; give --dims to choose")




def _raising_frame(cause: BaseException):
    """The frame ``cause`` was raised in (the last of its traceback), or None."""
    tb, frame = cause.__traceback__, None
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
    return frame


def _frame_divisor(cause: BaseException, width: int) -> int | None:
    """The count a check that says "divisible" without a number (``embed_dim must be divisible
    by num_heads``) divides the width by: read from the frame that raised, the one whole number
    there besides the width (``num_heads``: 2) that the width does not divide by."""
    frame = _raising_frame(cause)
    if frame is None or width not in [v for v in frame.f_locals.values() if type(v) is int]:
        return None
    values = list(frame.f_locals.values())
    owner = frame.f_locals.get("self")
    if owner is not None:  # ``self.head = 2`` set just before: the count is kept on the module
        values += list(getattr(owner, "__dict__", {}).values())
    counts = {v for v in values if type(v) is int and 1 < v <= 64 and width % v}
    return counts.pop() if len(counts) == 1 else None


#: a call of two arguments on a check's line: ``divisible_by(dim, 2)``
_CALL = re.compile(r"\b(\w+)\(\s*((?:self\.)?\w+)\s*,\s*((?:self\.)?\w+)\s*\)")


def _inlined(line: str, cause: BaseException) -> str:
    """``line`` with each call of a function of the user's own that takes one value modulo
    another (``def divisible_by(num, den): return (num % den) == 0``) written as that
    modulo (``divisible_by(dim, 2)`` -> ``dim % 2``), for the readings of a check."""
    frame = _raising_frame(cause)
    if frame is None:
        return line

    def written(found: re.Match) -> str:
        func = frame.f_globals.get(found.group(1))
        try:
            source = inspect.getsource(func) if inspect.isfunction(func) else ""
        except (OSError, TypeError):
            source = ""
        params = list(inspect.signature(func).parameters)[:2] if source else []
        if len(params) == 2 and re.search(rf"\b{params[0]}\s*%\s*{params[1]}\b", source):
            return f"{found.group(2)} % {found.group(3)}"
        return found.group(0)

    return _CALL.sub(written, line)


#: a constructor's check that one size divides another, in its own words
_DIVISIBLE = re.compile(r"divisible|multiple of", re.I)
#: ``a % b`` on the line of a check (``assert (max_seq_len % window_size) == 0``)
_MODULO = re.compile(r"(?:self\.)?(\w+)\s*%\s*(?:self\.)?(\w+)")
#: ``a == b`` on the line of a check (``assert d_model == d_word_vec``)
_EQUAL = re.compile(r"(?:self\.)?(\w+)\s*==\s*(?:self\.)?(\w+)")


def _checked_sizes(plan: Plan, cause: BaseException, site, line: str) -> Plan | None:
    """The plan again when the constructor's check refused sizes that do not go together, and
    no number in its message says which:

    - sizes its failing line takes modulo (``max_seq_len % window_size``), the first made the
      next multiple of the second;
    - sizes its own check asks to be equal (``assert d_model == d_word_vec``), the one left at
      its default made the other;
    - for a check inside a library's layer (``embed_dim must be divisible by num_heads`` of a
      width left at its default 768), each head count or head size shapetrace chose put back
      to its default.

    A value that is a probe size is changed as that size (``--dims L=64``), so that later
    readings of the plan keep it (``site``, ``line``: where the constructor failed, and that
    line). None when none applies."""
    given = set(plan.request.init or ())
    init = plan.init
    divisible, own = bool(_DIVISIBLE.search(str(cause))), bool(site) and raised_by_check(site)
    try:
        defaults = {p.name: p.default for p in inspect.signature(plan.request.cls).parameters.values()}
    except (TypeError, ValueError):
        return None
    changed: dict = {}
    sizes: dict = {}
    for a, b in _MODULO.findall(line) if divisible or own else ():
        va, vb = init.get(a), init.get(b)
        if a not in init:  # a layer the module builds checks sizes by names of its own
            count = _count_dividing(plan, cause, a, b)
            if count is not None:
                changed, sizes, why = count
                break
            continue
        if a in given or type(va) is not int or type(vb) is not int or vb < 2 or va % vb == 0:
            continue
        changed = {a: vb * max(1, math.ceil(va / vb))}
        why = f"the constructor asks that {b} ({vb}) divides it"
        break
    for a, b in _EQUAL.findall(line) if own and not changed else ():
        va, vb = init.get(a), init.get(b)
        if type(va) is not int or type(vb) is not int or va == vb:
            continue
        if b not in given and (defaults.get(b) == vb or a in given):
            changed, why = {b: va}, f"as {a}: the constructor asks that the two are equal"
        elif a not in given and defaults.get(a) == va:
            changed, why = {a: vb}, f"as {b}: the constructor asks that the two are equal"
        break
    if not changed and divisible and not own and not DIVISOR_ASKED.search(str(cause)):
        # a library's check naming no divisor (``divisible by num_heads``): its defaults go together
        heads = {plan.dims.get("H"), plan.dims.get("d")}
        changed = {name: defaults[name] for name, value in init.items()
                   if name not in given and type(value) is int and value in heads
                   and type(defaults.get(name)) is int and defaults[name] != value}
        why = "its default: with the probe's, the constructor refused sizes that do not divide each other"
    if not changed:
        return None
    dims = plan.dims
    probe = {name: size for name, size in dims.items() if name not in dims.explicit}
    sizes = sizes or {next(k for k, v in probe.items() if v == init[name]): value
                      for name, value in changed.items() if init[name] in probe.values()}
    again = plan
    if sizes:
        try:
            again = _at_sizes(plan.request, dims, **sizes)
        except (TargetError, UsageError):
            return None
    shown = ", ".join(f"{name}={value}" for name, value in changed.items())
    said = one_line(cause)[:80]
    return dataclasses.replace(again, init={**again.init, **changed}, note=(
        f"{shown}: {why}{f' ({said})' if said else ''}; give --init {next(iter(changed))}=... "
        f"to choose"))


def _count_dividing(plan: Plan, cause: BaseException, a: str, b: str):
    """``(init changed, probe sizes, why)`` when a layer the constructor builds checks that a
    count divides a size of its own (``assert d % heads == 0`` in an attention built with the
    module's width, left at its default 256, and the head count shapetrace chose, 11): the
    values read where the check raised, the count made the largest divisor of the size up to
    16 that keeps the head count and the head size apart, as the probe's head count. None when
    the count is not one shapetrace chose, or nothing fits."""
    frame = _raising_frame(cause)
    if frame is None:
        return None
    va, vb = frame.f_locals.get(a), frame.f_locals.get(b)
    dims, given = plan.dims, set(plan.request.init or ())
    if type(va) is not int or type(vb) is not int or vb < 2 or va % vb == 0 \
            or vb != dims.get("H") or "H" in dims.explicit or va in dims.values():
        return None
    names = [k for k, v in plan.init.items() if v == vb and k not in given]
    count = next((n for n in range(16, 1, -1) if va % n == 0 and va // n != n
                  and n not in dims.values() and va // n not in dims.values()), None)
    if not names or count is None:
        return None
    why = (f"a layer it builds asks that {b} divides {a} ({va}, which the constructor keeps): "
           f"{count} heads of {va // count}")
    return {name: count for name in names}, {"H": count, "d": va // count}, why


def at_even_width(request: Request, exc: Exception, notes: list[str]):
    """The plan at an even width (a note said) when a module argument refused the odd one, or
    at the head count or head size a module argument's own check asked for."""
    dims, half = request.dims, request.dims["C"] // 2
    cause = exc.__cause__
    count = count_multiple(str(cause), dims, {"H", "d"} - set(dims.explicit)) \
        if cause is not None else None
    if count is not None:
        sizes = {count[0]: count[1]}
        note = (f"{count[0]}={count[1]}: a module its constructor builds asks for {count[2]}; "
                f"give --dims {count[0]}=... to choose")
    elif dims["C"] % 2 and not {"C", "d"} & set(dims.explicit) and (
            "cannot build constructor argument" in str(exc) and {half, half + 1} <= numbers_in(str(exc))
            or _even_asked(cause, dims)):
        sizes, note = {"d": EVEN_HEAD_SIZE}, None
    else:
        return None
    try:
        plan = _at_sizes(request, dims, **sizes)
    except (TargetError, UsageError):
        return None
    notes.append(note or f"C={plan.dims['C']} (head size d={EVEN_HEAD_SIZE}): a module its "
                         f"constructor builds needs an even width; give --dims to choose")
    return plan


def _even_asked(cause: BaseException | None, dims) -> bool:
    """Whether a module argument's constructor (or its config's) refused an odd head size by a
    check that asks for an even one (``assert head_dim % 2 == 0``, ``RoPE requires an even
    rotary dimension``), said by the error or by the line that raised it, down its causes."""
    seen = 0
    while cause is not None and seen < 4 and dims["d"] % 2:
        frame = innermost_user_frame(cause.__traceback__, installed_is_library=False)
        line = linecache.getline(frame[0], frame[1]) if frame else ""
        if EVEN_ASKED.search(str(cause)) or re.search(r"%\s*2\s*[!=]=", line):
            return True
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return False


def _fewer_heads(plan: Plan, failed: TargetError) -> Plan | None:
    """``plan`` at two heads of the same head size (C = 2d) when the module would have too many
    parameters to check at the probe width (widths multiplied per level: a U-Net); None when
    that is not why it was refused, or the caller chose the width or the heads."""
    dims = plan.dims
    if "too many to check here" not in str(failed) or {"C", "H"} & set(dims.explicit) \
            or dims["H"] <= 2 or plan.init is None:
        return None
    again = _at_sizes(plan.request, dims, H=2, d=dims["d"])
    return dataclasses.replace(again, note=f"C={again.dims['C']} (H=2): at C={dims['C']} the "
                               f"module would have too many parameters to check; give --dims "
                               f"to choose")


def _at_sizes(request: Request, dims: Dims, **sizes: int) -> Plan:
    """``request`` planned again at ``sizes``, over the sizes its caller gave in ``dims``."""
    given = {k: dims[k] for k in dims.explicit}
    return make_plan(dataclasses.replace(request, dims=Dims({**given, **sizes})))
