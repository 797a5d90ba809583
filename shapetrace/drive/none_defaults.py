"""Constructor arguments left at a default of None that the constructor cannot take.

shapetrace keeps a constructor's own defaults. A default of None usually means "leave this part
out" (the constructor tests it), but code also writes ``emb_dim=None`` for an argument every
caller of the project passes: ``nn.Linear(emb_dim, width)`` or ``c + c_skip`` then raise on the
None, and the module could not be built on a value shapetrace left, not on a bug of the code.

When the constructor raised a ``TypeError`` or an ``AttributeError`` at a line of its own (or of
a layer it builds) that reads such a parameter while it holds None, the module is built again
with that parameter set to the size its name or its use says (the width when nothing says
more), with a note that names it. A failure that stands then is reported as before.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import linecache
import re
from types import FunctionType

from ..base.errors import TargetError
from ..analysis.code import unpacked_into
from ..base.source import innermost_entry_of, is_library_file, none_parameters
from .config_fields import config_values
from .defaults_read import switches_off
from .infer import MISSING, infer_value
from .plan import Plan
from .usage import meaning_by_use
from .widths import even_width

#: what a None read as a number, a sequence or an object raises
_RAISED_ON_NONE = (TypeError, AttributeError)


def constructor_reading(plan: Plan, failed: TargetError) -> Plan:
    """``plan`` built again another way after its constructor raised (``failed``): at an even
    width or heads of a multiple of its own (:func:`widths.even_width`), with the switches
    shapetrace turned on off (:func:`defaults_read.switches_off`), or with the sizes left at
    a default of None set (:func:`nones_filled`, :func:`fields_filled`), or with a size it
    reads as sides given as sides (:func:`ints_as_sides`), the first that applies. Raises ``failed``
    when none does."""
    for reading in (even_width, switches_off, nones_filled, fields_filled):
        try:
            return reading(plan, failed)
        except TargetError:
            pass
    return ints_as_sides(plan, failed)


def _init_codes(cls: type) -> set:
    """The code objects of the constructors ``cls`` runs (its own and its bases')."""
    return {init.__code__ for klass in cls.__mro__
            if isinstance(init := klass.__dict__.get("__init__"), FunctionType)}


def _own(plan: Plan, failed) -> tuple:
    """``(cause, cls, given)`` when ``failed`` is the constructor's ``TypeError`` or
    ``AttributeError`` of a class shapetrace built; raises ``failed`` otherwise."""
    cause, cls = failed.__cause__, plan.request.module
    if not isinstance(cause, _RAISED_ON_NONE) or plan.init is None or not inspect.isclass(cls):
        raise failed
    return cause, cls, set(plan.request.init or {})


def _size(name: str, cause: BaseException, dims, cls: type | None = None, *, square: bool = False) -> object:
    """The value of a parameter or a config field ``name`` that held None where ``cause`` was
    raised: what its name says, else (where the error asked for an integer) the size its use
    says (``square``: both sides of a square table, the maximum length) or the width; MISSING
    when nothing says."""
    value = infer_value(name, None, dims, has_default=False)
    if value is not MISSING and value is not None and not isinstance(value, bool):
        return value
    if not _INTEGER_WANTED.search(str(cause)):
        return MISSING
    if square:
        return dims["L"]
    used = meaning_by_use(cls, name) if cls is not None else None
    return dims[used] if used in dims else dims["C"]


#: what torch and Python say when a None stood where an integer was wanted
_INTEGER_WANTED = re.compile(r"\bints?\b|argument 'size'|'int' and 'NoneType'|'NoneType' and 'int'"
                             r"|\(\) takes \d+ positional arguments? but \d+ were given")  # torch's factories


def nones_filled(plan: Plan, failed) -> Plan:
    """``plan`` with the constructor arguments that held their default None where the
    constructor raised (``failed``, a target error whose cause is that exception) set to a
    size. Raises ``failed`` when none did, or the caller gave them."""
    cause, cls, given = _own(plan, failed)
    try:
        defaults = {name: p.default for name, p in inspect.signature(cls).parameters.items()}
    except (TypeError, ValueError):
        raise failed from None
    read = [name for name in none_parameters(cause.__traceback__, codes=_init_codes(cls))
            if name not in given and defaults.get(name, 0) is None
            and name in plan.init and plan.init[name] is None]
    values = {name: value for name in read
              if (value := _size(name, cause, plan.dims, cls)) is not MISSING}
    if not values:
        raise failed
    return _built_as(plan, values, _note(values, "its default None", cause))


def _note(values: dict, held: str, cause: BaseException) -> str:
    shown = ", ".join(f"{name}={value!r}" for name, value in values.items())
    return (f"{shown}: left at {held}, the constructor raised {type(cause).__name__} where it "
            f"read it; give --init {next(iter(values))}=VALUE to choose")


#: ``config.field`` (after any chain of attributes) and ``config["field"]`` in a line of code
_ATTRIBUTE = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.([A-Za-z_]\w*)")
_KEY = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\[[\"']([A-Za-z_]\w*)[\"']\]")
_ABSENT = object()


def fields_filled(plan: Plan, failed) -> Plan:
    """``plan`` with the fields of a config shapetrace made (from the fields the code reads)
    that held None where the constructor raised set to a value (``initializer_range`` 0.02, a
    size where an integer was wanted): a line of the constructor, or of a method it calls,
    that reads ``config.field`` of that very object. Raises ``failed`` when none did."""
    cause, cls, given = _own(plan, failed)
    made = {id(v): k for k, v in plan.init.items() if k not in given and config_values(v)}
    found: dict[str, dict] = {}
    tb = cause.__traceback__
    while tb is not None and made:
        frame, filename = tb.tb_frame, tb.tb_frame.f_code.co_filename
        if not is_library_file(filename):
            line = linecache.getline(filename, tb.tb_lineno)
            read = [(prefix, field, line) for prefix, field in (*_ATTRIBUTE.findall(line), *_KEY.findall(line))]
            read += _through_names(frame, tb.tb_lineno, line)
            for prefix, field, where in read:
                obj = _evaluated(prefix, frame)
                if id(obj) in made and config_values(obj).get(field, _ABSENT) is None:
                    value = _size(field, cause, plan.dims, square=_squared(where, prefix, field))
                    if value is not MISSING:
                        found.setdefault(made[id(obj)], {})[field] = value
        tb = tb.tb_next
    if not found:
        raise failed
    init = {**plan.init, **{name: _with(plan.init[name], fields) for name, fields in found.items()}}
    values = {f"{name}.{field}": value for name, fields in found.items() for field, value in fields.items()}
    return _built_as(plan, {name: init[name] for name in found}, _note(values, "None", cause))


#: a name, or an attribute of ``self``, that a line reads
_READ_NAME = re.compile(r"(?<![\w.])((?:self\.)?[A-Za-z_]\w*)\b(?!\s*[(=])")


def _through_names(frame, lineno: int, line: str) -> list[tuple[str, str, str]]:
    """``(prefix, field, line)`` of each config field a name on ``line`` holds by assignment
    earlier in the same function, when the name holds None there (``num_items =
    args.num_items`` read as ``num_items + 2``; ``self.hidden = hidden`` and ``hidden =
    args.hidden_units``, two steps at most), with the line of the assignment that read it."""
    code = frame.f_code
    body = [linecache.getline(code.co_filename, n) for n in range(code.co_firstlineno, lineno)]
    found: list[tuple[str, str, str]] = []
    for name in dict.fromkeys(_READ_NAME.findall(line)):
        if _evaluated(name, frame) is not None:
            continue
        target = name
        for _ in range(3):
            rhs = _assigned(body, target)
            if rhs is None:
                break
            field = _ATTRIBUTE.fullmatch(rhs) or _KEY.fullmatch(rhs)
            if field is not None and not rhs.startswith("self."):
                found.append((field.group(1), field.group(2), rhs))
                break
            if not _READ_NAME.fullmatch(rhs):
                break
            target = rhs
    return found


def _assigned(body: list[str], target: str) -> str | None:
    """The right side of the last plain assignment to ``target`` in ``body`` (lines), when it
    is a name, an attribute or a key; None otherwise."""
    pattern = re.compile(rf"^\s*{re.escape(target)}\s*=\s*([\w.\[\]\"']+)\s*(?:#.*)?$")
    found = None
    for text in body:
        match = pattern.match(text)
        if match is not None:
            found = match.group(1)
    return found


def _squared(line: str, prefix: str, field: str) -> bool:
    """Whether ``line`` hands the field to one call twice, as both sides of a square table
    (``torch.ones(cfg.seq_size, cfg.seq_size)``: a mask over positions)."""
    spelled = rf"{re.escape(prefix)}(?:\.{re.escape(field)}\b|\[[\"']{re.escape(field)}[\"']\])"
    return re.search(rf"\(\s*{spelled}\s*,\s*{spelled}\s*[,)]", line) is not None


def _evaluated(prefix: str, frame) -> object:
    """The object ``prefix`` (``self.args``, ``config``) names in ``frame``, read without
    running anything but attribute lookups; ``_ABSENT`` when it names nothing."""
    first, *rest = prefix.split(".")
    obj = frame.f_locals.get(first, _ABSENT)
    for part in rest:
        if obj is _ABSENT:
            break
        try:
            obj = inspect.getattr_static(obj, part, _ABSENT) if not isinstance(obj, dict) \
                else obj.get(part, _ABSENT)
        except Exception:  # noqa: BLE001 - a lookup that fails names nothing
            return _ABSENT
        if isinstance(obj, (staticmethod, classmethod, property)):
            return _ABSENT
    return obj


def _with(config, fields: dict):
    """A copy of ``config`` with ``fields`` set."""
    if isinstance(config, dict):
        made = copy.copy(config)
        made.update(fields)
        return made
    made = copy.copy(config)
    for key, value in fields.items():
        object.__setattr__(made, key, value)
    return made


def _indices(cls: type, name: str) -> int:
    """One more than the largest constant index the class's source reads ``name`` at
    (``window_size[2]``: 3), or 0."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return 0
    return max((int(i) + 1 for i in re.findall(rf"\b{re.escape(name)}\s*\[\s*(\d)\s*\]", source)),
               default=0)


#: what Python says when an integer stood where a sequence was wanted
_SEQUENCE_WANTED = re.compile(r"'int' object is not (?:subscriptable|iterable)|"
                              r"cannot unpack non-iterable int|argument of type 'int' is not iterable")


def ints_as_sides(plan: Plan, failed) -> Plan:
    """``plan`` with a constructor argument shapetrace set to a number (``window_size=4``)
    given as the sides the constructor reads it as (``window_size[0]``, ``[2]``: three sides,
    ``H, W = input_resolution``: two; ``in attn_res``: one): where the constructor's own line
    indexed, unpacked or searched it and Python refused an integer. Raises ``failed`` when
    no argument set so is read there."""
    cause, cls, given = _own(plan, failed)
    if not _SEQUENCE_WANTED.search(str(cause)):
        raise failed
    found = innermost_entry_of(cause.__traceback__, _init_codes(cls))
    line = linecache.getline(found[0].f_code.co_filename, found[1]) if found else ""
    local = found[0].f_locals if found else {}
    named = [name for name, value in plan.init.items()
             if name not in given and type(value) is int and local.get(name, value) == value
             and re.search(rf"\b{re.escape(name)}\b", line)]
    indexed = [name for name in named if re.search(rf"\b{re.escape(name)}\s*\[", line)]
    inner = 0
    if indexed or len(named) == 1:
        chosen = (indexed or named)[0]
    else:  # handed on under its own name to a layer that indexes it (``kernel_size[0]``)
        read = _indexed_inside(plan, cause, given)
        if read is None:
            raise failed
        chosen, inner = read
    value = plan.init[chosen]
    sides = (value,) * max(_indices(cls, chosen), unpacked_into(cls, chosen), inner,
                           1 if "argument of type" in str(cause) else 2)
    note = (f"{chosen}={sides}: as the number {value}, the constructor raised "
            f"{type(cause).__name__} where it read it as sides; give --init {chosen}=VALUE to choose")
    return _built_as(plan, {chosen: sides}, note)


def _indexed_inside(plan: Plan, cause: BaseException, given) -> tuple[str, int] | None:
    """``(argument, sides)``: the constructor argument set to a number that the innermost line
    of the user's code that raised indexes under the same name and value (a layer the
    constructor hands ``kernel_size`` to, reading ``kernel_size[0]``), and one more than the
    largest index that function reads it at; None otherwise."""
    from ..base.source import innermost_user_entry

    found = innermost_user_entry(cause.__traceback__, installed_is_library=False)
    if found is None:
        return None
    frame, lineno = found
    line = linecache.getline(frame.f_code.co_filename, lineno)
    for name, value in plan.init.items():
        if name in given or type(value) is not int or frame.f_locals.get(name, None) != value \
                or not re.search(rf"\b{re.escape(name)}\s*\[", line):
            continue
        try:
            source = inspect.getsource(frame.f_code)
        except (OSError, TypeError):
            source = line
        reads = [int(i) + 1 for i in re.findall(rf"\b{re.escape(name)}\s*\[\s*(\d)\s*\]", source)]
        return name, max(reads, default=0)
    return None


def _built_as(plan: Plan, values: dict, note: str) -> Plan:
    """``plan`` with the constructor arguments ``values``, kept when it is made again."""
    return dataclasses.replace(plan, init={**plan.init, **values}, note=note,
                               built_as=(*plan.built_as, *values.items()))
