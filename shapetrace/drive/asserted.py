"""An input's shape read from the module's own check of it: ``bs, width, length = qkv.shape``
then ``assert width % (3 * self.n_heads) == 0``.

A forward that unpacks an input's sizes and asserts one of them is a multiple of its own
numbers says what it takes: the axes named as sizes (``bs``: the batch, ``length``: the
sequence) and a multiple of that number at the checked axis. When such a check refused the
guessed input, the input is given so: the checked axis as that many head sizes (``3 * H`` head
sizes: ``3*C``), the others as their names say.
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..base.names import dim_of_word
from ..base.specs import InputSpec
from .guess import Guess

#: ``assert width % (3 * self.n_heads) == 0``
_ASSERTED = re.compile(r"^\s*assert\s+(\w+)\s*%\s*(.+?)\s*==\s*0\s*(?:,.*)?$")
#: ``bs, width, length = qkv.shape`` (or ``.size()``)
_UNPACKED = re.compile(r"^\s*([\w\s,]+?)\s*=\s*(\w+)\.(?:shape|size\(\))\s*(?:#.*)?$")
#: how far above the check its unpacking is looked for
_LINES_UP = 12


@dataclass(frozen=True)
class AssertedInputs(Guess):
    """Float inputs guessed from their names (``names``) that a check of the module's own may
    refuse."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return self._read(failed, plan) is not None

    def others(self, plan, failed) -> Iterator:
        name, dims, line = self._read(failed, plan)
        inputs = tuple(dataclasses.replace(s, dims=dims) if isinstance(s, InputSpec) and s.name == name
                       else s for s in plan.inputs)
        spec = next(s for s in inputs if isinstance(s, InputSpec) and s.name == name)
        note = (f"{name} read as ({', '.join(map(str, dims))}) from the module's own check of its "
                f"sizes (line {line}); give --input {spec} to choose")
        rest = tuple(g for g in plan.guesses if g is not self)
        yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)

    def _read(self, failed, plan):
        """``(input, dims, line)`` when ``failed`` was refused by an ``assert`` that one of the
        sizes unpacked from a guessed input is a multiple of the module's own number; else None."""
        if not isinstance(failed.raised, AssertionError) or failed.raised_at is None:
            return None
        path, line = failed.raised_at
        asserted = _ASSERTED.match(linecache.getline(path, line))
        if asserted is None:
            return None
        size, expression = asserted.groups()
        unpacked = next((m for n in range(line - 1, max(line - _LINES_UP, 0), -1)
                         if (m := _UNPACKED.match(linecache.getline(path, n)))), None)
        if unpacked is None or unpacked.group(2) not in self.names:
            return None
        parts = [p.strip() for p in unpacked.group(1).split(",")]
        spec = next((s for s in plan.inputs if isinstance(s, InputSpec) and s.name == unpacked.group(2)), None)
        if size not in parts or spec is None or len(spec.dims) != len(parts):
            return None
        owner = _owner(failed.model, path, line)
        multiple = _value(expression, owner) if owner is not None else None
        checked = _as_heads(multiple, plan.dims) if multiple is not None else None
        if checked is None:
            return None
        dims = tuple(checked if part == size else (_named(part) or old)
                     for part, old in zip(parts, spec.dims))
        return (spec.name, dims, line) if dims != tuple(spec.dims) else None


def _named(part: str) -> str | None:
    dim = dim_of_word(part)
    return dim if dim in ("B", "T", "S") else None


def _as_heads(multiple: int, dims) -> str | None:
    """That many head sizes, in probe terms: ``3*C`` for 3 * H, ``2*d`` for 2."""
    if not 1 <= multiple <= 4096:
        return None
    heads = dims["H"]
    if multiple % heads == 0:
        factor = multiple // heads
        return "C" if factor == 1 else f"{factor}*C"
    return "d" if multiple == 1 else f"{multiple}*d"


def _owner(model, path: str, line: int):
    """The module (``model`` or one inside it) whose forward holds ``line`` of ``path``: the
    ``self`` of the check; None when none does."""
    import torch.nn as nn

    for module in model.modules() if isinstance(model, nn.Module) else ():
        code = getattr(type(module).forward, "__code__", None)
        if code is None or code.co_filename != path:
            continue
        lines = [n for _, _, n in code.co_lines() if n is not None]
        if lines and code.co_firstlineno <= line <= max(lines):
            return module
    return None


def _value(expression: str, owner) -> int | None:
    """The integer ``expression`` (``(3 * self.n_heads)``) has, read from ``owner``'s attributes
    with numbers and ``*``, ``+``, ``//`` alone; None otherwise."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            found = getattr(owner, node.attr, None)
            return found if type(found) is int else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.FloorDiv)):
            left, right = value(node.left), value(node.right)
            if left is None or right is None:
                return None
            if isinstance(node.op, ast.Mult):
                return left * right
            return left + right if isinstance(node.op, ast.Add) else (left // right if right else None)
        return None

    return value(tree.body)
