"""Masks given with the meaning the code reads in them (``analysis.masks``: the one reading of
a mask's meaning, shared with the behaviour checks): the specs of an optional or a required
mask forward takes, their other shapes, and whether one may be left None. Uses that disagree,
or none the reading knows, say nothing: the mask is then left out, as before.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect

from ..analysis.code import compared_with_none, demanded
from ..analysis.masks import handed_meaning, mask_meaning
from ..base.names import MASK_INPUT
from ..base.specs import FLOAT_MASKS, InputSpec
from .asks import mask_axes
from .usage import _function_def, _tree

__all__ = ["MASK_SHAPES", "handed_meaning", "mask_meaning", "may_be_none", "optional_mask",
           "read_unguarded", "required_mask", "with_meanings"]


def with_meanings(inputs: tuple, forward) -> tuple:
    """``inputs`` with each mask (``InputSpec.mask``) given the meaning ``forward`` reads in an
    argument of its name, where it reads one."""
    out = []
    for spec in inputs:
        meaning = mask_meaning(forward, spec.name) \
            if forward is not None and getattr(spec, "mask", None) else None
        if meaning is not None and meaning != spec.mask:
            spec = dataclasses.replace(spec, mask=meaning,
                                       dtype="float" if meaning in FLOAT_MASKS else "bool")
        out.append(spec)
    return tuple(out)


#: a mask's other shapes, its first reading being (T, T) or (T, S); X: its last axis. The
#: last, (B, X), is a mask per sample the code moves itself (``m.unsqueeze(1)`` on (B, C, T))
MASK_SHAPES = (("B", "T", "X"), ("B", 1, "X"), ("B", 1, 1, "X"), ("B", "X"))


def may_be_none(cls: type, names: tuple[str, ...], *, tested: bool = False) -> bool:
    """Whether every mask of ``names`` may be left None: the code tests it with ``is None``
    (in forward or where forward hands it), or (``tested`` False) ``cls.forward`` gives it a
    default."""
    forward = getattr(cls, "forward", None)
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False
    return all(name in params and not demanded(forward, name)  # ``assert mask is not None``
               and ((not tested and params[name].default is not inspect.Parameter.empty)
                    or _tests_none(forward, name, cls)) for name in names)


def _tests_none(forward, name: str, cls: type) -> bool:
    """forward tests ``name`` with ``is None``, or code it hands it to does and forward reads
    nothing of it first."""
    return compared_with_none(forward, name) or (handed_meaning(forward, name, cls)[1]
                                                 and not read_unguarded(forward, name))


def read_unguarded(forward, name: str) -> bool:
    """Whether a statement of forward's own body, under no ``if`` nor ``try``, reads an
    attribute or an item of its argument ``name`` (``mask = mask.repeat(h, 1, 1)``): None
    there fails, whatever the code it is handed to tests."""
    func = getattr(forward, "__func__", forward)
    body = _function_def(_tree(func), getattr(func, "__name__", ""))
    for statement in body.body if body is not None else ():
        if isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            continue
        for node in ast.walk(statement):
            if isinstance(node, (ast.Attribute, ast.Subscript)) \
                    and isinstance(node.value, ast.Name) and node.value.id == name:
                return True
    return False


def _unguarded_inside(forward, name: str, owner: type | None) -> bool:
    """Whether code forward hands ``name`` to reads it unguarded (``mask = mask.repeat(h, 1,
    1)`` in the attention a block hands its mask to) before any code nearer forward tests it
    with ``is None``: None fails there, whatever code further down tests."""
    from ..analysis.handed import handed_levels
    from ..analysis.masks import _same

    for level in handed_levels(forward, name, owner, restated=_same):
        if any(read_unguarded(func, param) for func, param in level):
            return True
        if any(compared_with_none(func, param) for func, param in level):
            return False
    return False


def optional_mask(name: str, forward, specs: list, owner: type | None = None) -> InputSpec | None:
    """An optional mask whose meaning its code shows (``drive.masks``), given when forward
    tests it with ``is None``, or when forward reads it unguarded or no code it is handed to
    tests it (a default of None would fail there): (T, S) beside keys of their own length, else
    (T, T); None otherwise."""
    if not MASK_INPUT.search(name):
        return None
    if compared_with_none(forward, name):
        return _padding(forward, name, _mask_spec(name, mask_meaning(forward, name), specs), specs)
    meaning, tested = handed_meaning(forward, name, owner)
    unguarded = read_unguarded(forward, name) or _unguarded_inside(forward, name, owner)
    return None if tested and not unguarded else \
        _padding(forward, name, _mask_spec(name, meaning, specs), specs)


def required_mask(name: str, forward, specs: list, owner: type | None) -> InputSpec | None:
    """A mask forward requires, of the meaning read where its code uses it (in forward or the
    code forward hands it to, ``analysis.handed``); None when nothing says what it means. The
    condition of a ``masked_fill`` or SDPA's ``attn_mask`` is a mask whatever its name; an
    argument added to something or multiplied into it is one only when its name says so."""
    meaning = handed_meaning(forward, name, owner)[0]
    if meaning in FLOAT_MASKS and not MASK_INPUT.search(name):
        return None
    return _padding(forward, name, _mask_spec(name, meaning, specs), specs)


def _padding(forward, name: str, spec: InputSpec | None, specs: list) -> InputSpec | None:
    """A padding mask, one flag per key for each sample (``(B, T)``, ``(B, S)`` beside keys of
    their own length), when the forward hands ``name`` to torch's attention as
    ``key_padding_mask=`` (True: a key left out), whatever else its use said; ``spec`` (what
    that use said) otherwise."""
    if spec is not None and spec.mask not in ("drop", "keep"):
        return spec
    axes = mask_axes(forward, name)
    if axes == ("T", "T"):
        return spec
    if "S" in axes and not any(isinstance(s, InputSpec) and "S" in s.dims for s in specs):
        axes = tuple("T" if a == "S" else a for a in axes)
    return InputSpec(name, axes, "bool", mask="drop")


def _mask_spec(name: str, meaning: str | None, specs: list) -> InputSpec | None:
    if meaning is None:
        return None
    if meaning == "mul":
        return _values_mask(name, specs)
    sources = any(isinstance(s, InputSpec) and "S" in s.dims for s in specs)
    return InputSpec(name, ("T", "S") if sources else ("T", "T"),
                     "float" if meaning == "add" else "bool", mask=meaning)


def _values_mask(name: str, specs: list) -> InputSpec | None:
    """A 0/1 mask multiplied into the values (``x * x_mask``): the shape of the sequence before
    it, (B, T, C) or (B, C, T), with its channels 1; None without one."""
    values = next((s for s in specs if isinstance(s, InputSpec) and s.dtype == "float"
                   and s.mask is None and len(s.dims) == 3 and "T" in s.dims and s.dims[0] == "B"), None)
    if values is None:
        return None
    return InputSpec(name, tuple(d if d in ("B", "T") else 1 for d in values.dims), "float", mask="mul")
