"""What a mask argument means, read from how forward uses it (``ast``; nothing run). The one
reading of a mask's meaning: the driver gives an optional mask with it (``drive.masks``), and
the behaviour checks judge a mask by it (``behaviour.masks``).

- ``scores.masked_fill(mask == 0, -inf)``, ``masked_fill(~mask, ...)``,
  ``masked_fill(mask.logical_not(), ...)``, ``masked_fill(mask == False, ...)``: 1/True = keep;
- ``scores.masked_fill(mask, -inf)``, ``masked_fill(mask.bool(), ...)``,
  ``masked_fill(mask == 1, ...)``: True = masked out;
- SDPA's ``attn_mask=mask`` (or ``mask.bool()``): a boolean mask there means True = attend;
- ``scores + mask`` (``scores += mask``): a float added to the scores;
- ``x * x_mask`` (``x *= mask``): a float 0/1 multiplied into the values, 1 = a real position. A
  mask read so and also as True/1 = keep says the same: keep.

A local name made from the mask alone (``m = mask.bool() if mask is not None else None``) stands
for it. Uses that disagree, or none of these, say nothing.
"""

from __future__ import annotations

import ast

from .code import compared_with_none, function_def, parsed
from .handed import handed, standing_for

_SDPA = "scaled_dot_product_attention"
_CASTS = frozenset({"bool", "to", "float", "type", "unsqueeze", "view", "reshape", "expand",
                    "expand_as", "contiguous", "__getitem__", "repeat", "repeat_interleave"})


def mask_meaning(forward, name: str) -> str | None:
    """``"keep"``, ``"drop"``, ``"add"`` or ``"mul"`` for forward's argument ``name``, or
    None."""
    return _one(mask_meanings(forward, name))


def _one(found: set[str]) -> str | None:
    """The one meaning ``found`` says, or None: a mask multiplied in (1 = real) and read as
    True/1 = keep means keep."""
    if found == {"keep", "mul"}:
        return "keep"
    return next(iter(found)) if len(found) == 1 else None


def handed_meaning(forward, name: str, owner: type | None = None) -> tuple[str | None, bool]:
    """The meaning of forward's argument ``name`` read in forward and in the code it hands the
    argument to (``analysis.handed``), or None where none or two are read; and whether any of that
    code tests it with ``is None``."""
    found: set[str] = set()
    tested = False
    for func, param in handed(forward, name, owner, restated=_same):
        found |= mask_meanings(func, param)
        tested = tested or compared_with_none(func, param)
    return _one(found), tested


def mask_meanings(func, name: str) -> set[str]:
    """Every meaning the uses of ``func``'s argument ``name`` give it (two or more: the uses
    disagree; none: nothing reads it as a mask)."""
    func = getattr(func, "__func__", func)
    body = function_def(parsed(func), getattr(func, "__name__", ""))
    if body is None:
        return set()
    names = standing_for(body, name, _same)
    found: set[str] = set()
    for node in ast.walk(body):
        meaning = _use(node, names)
        if meaning is not None:
            found.add(meaning)
    return found


def _same(node: ast.expr, names: set[str]) -> bool:
    """Whether ``node`` is one of ``names``, cast or reshaped (``mask.bool()``,
    ``mask[:, None]``), or that else None (``mask.bool() if mask is not None else None``)."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _CASTS:
        return _same(node.func.value, names)
    if isinstance(node, ast.Subscript):
        return _same(node.value, names)
    if isinstance(node, ast.IfExp):
        none = lambda n: isinstance(n, ast.Constant) and n.value is None  # noqa: E731
        return (_same(node.body, names) and none(node.orelse)) or \
            (_same(node.orelse, names) and none(node.body))
    return False


def _use(node: ast.AST, names: set[str]) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if attr in ("masked_fill", "masked_fill_"):
            args = node.args[1:] if isinstance(func, ast.Attribute) and \
                isinstance(func.value, ast.Name) and func.value.id == "torch" else node.args
            return _condition(args[0], names) if args else None
        if attr == _SDPA:
            given = next((k.value for k in node.keywords if k.arg == "attn_mask"),
                         node.args[3] if len(node.args) > 3 else None)
            if given is not None and _same(given, names) and not _float_cast(given):
                return "keep"
            if given is not None and _condition(given, names) == "keep":
                return "drop"  # attn_mask=~mask: the True of mask are the keys left out
        for k in node.keywords:  # torch's attention layers: True = a key left out, as a
            if k.arg and k.arg.endswith("key_padding_mask") and not _float_cast(k.value):
                return _condition(k.value, names)  # masked_fill's condition (``~mask``: keep)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if _same(node.left, names) or _same(node.right, names):
            return "add"
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) \
            and _same(node.value, names):
        return "add"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for one, other in ((node.left, node.right), (node.right, node.left)):
            if _same(one, names):  # times a large negative number: a bias that drops the 1s
                return "drop" if _negative(other) else "mul"
            if _one_minus(one, names) and _negative(other):
                return "keep"  # (1 - mask) * -1e4: the 0s dropped
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult) \
            and _same(node.value, names):
        return "mul"
    return None


def _negative(node: ast.expr) -> bool:
    """A negative number written in the code (``-1e9``, ``-10000.0``, ``float("-inf")``,
    ``torch.finfo(x.dtype).min``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)) \
            and node.operand.value > 0
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and node.value < 0
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "float" and node.args:
        return isinstance(node.args[0], ast.Constant) and str(node.args[0].value).strip() == "-inf"
    return isinstance(node, ast.Attribute) and node.attr == "min" \
        and isinstance(node.value, ast.Call) and getattr(node.value.func, "attr", None) == "finfo"


def _one_minus(node: ast.expr, names: set[str]) -> bool:
    """``1 - mask`` (``1.0 - mask.float()``): the mask turned the other way."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) \
        and isinstance(node.left, ast.Constant) and node.left.value == 1 and _same(node.right, names)


def _float_cast(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "float"


def _condition(node: ast.expr, names: set[str]) -> str | None:
    """The meaning of a mask given to masked_fill as the condition ``node``."""
    if _same(node, names):
        return "drop"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)) \
            and _same(node.operand, names):
        return "keep"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "logical_not" and _same(node.func.value, names):
        return "keep"
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and _same(node.left, names) \
            and isinstance(node.comparators[0], ast.Constant):
        value, op = node.comparators[0].value, node.ops[0]
        if isinstance(op, ast.Eq):
            return "keep" if value in (0, False) and value is not None else \
                "drop" if value in (1, True) else None
        if isinstance(op, ast.NotEq):
            return "drop" if value in (0, False) and value is not None else \
                "keep" if value in (1, True) else None
    return None
