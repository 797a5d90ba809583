"""An input's axes read from the ``einsum`` its code hands it to.

``torch.einsum("bs,j->bsj", positions, self.inv_freq)`` says ``positions`` has two axes, a batch
and a sequence: where no name says what an input is, the letters of its operand in an einsum of
forward, or of the code forward hands it to (``analysis.handed``), give its shape, each letter
read as the size it stands for (``b`` the batch, ``t``, ``n``, ``l``, ``s`` a sequence, ``h`` the
heads, ``d`` a head's size, ``c`` and ``e`` the width). A letter for no size, or two letters for
one size, say nothing. A sequence of its own (``s``) is the queries' when no other input has one.
"""

from __future__ import annotations

import ast

from ..analysis.handed import handed
from ..analysis.code import owner_class
from ..base.names import dim_of_word
from ..base.specs import InputSpec
from .usage import _function_def, _tree

#: letters for sizes beside those ``base.names.dim_of_word`` reads (``l``: a length)
_LETTERS = {"e": "C", "l": "T"}


def spec_by_einsum(name: str, forward, specs) -> InputSpec | None:
    """The float input ``name`` with the axes its operand's letters give in the first einsum
    (with a literal equation) it reaches, or None."""
    cls = owner_class(forward)
    for func, there in handed(forward, name, cls):
        body = _function_def(_tree(func), getattr(func, "__name__", ""))
        if body is None:
            continue
        for node in ast.walk(body):
            letters = _operand(node, there)
            if letters is None:
                continue
            dims = [_LETTERS.get(c) or dim_of_word(c) for c in letters]
            if not letters or None in dims or len(set(dims)) != len(dims):
                return None
            if "S" in dims and not any(isinstance(s, InputSpec) and "S" in s.dims for s in specs):
                dims = ["T" if d == "S" else d for d in dims]
            return InputSpec(name, tuple(dims))
    return None


def _operand(node: ast.AST, name: str) -> str | None:
    """The subscripts ``name`` has in the einsum ``node`` is, or None when it is none."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called != "einsum":
        return None
    equation = node.args[0].value.replace(" ", "")
    inputs = equation.split("->")[0].split(",")
    operands = node.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (ast.List, ast.Tuple)):
        operands = operands[0].elts
    for letters, operand in zip(inputs, operands):
        while isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute) \
                and operand.func.attr in _CASTS:  # ``positions.float()``
            operand = operand.func.value
        if isinstance(operand, ast.Name) and operand.id == name and letters.isalpha():
            return letters
    return None


#: methods that change a tensor's type and keep its axes
_CASTS = frozenset({"float", "double", "half", "long", "int", "to", "type", "type_as"})
