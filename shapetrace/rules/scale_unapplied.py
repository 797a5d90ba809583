"""attention-scale: scores never scaled, beside a 1/sqrt(head size) the module made and never used.

Attention whose scores are not scaled at all is a warning: the scale may be folded into the
weights (T5), and nothing in the run says it was owed. A module that computed the factor itself
(``self.scale = dim_head ** -0.5`` in its constructor: an attribute whose value is the very
1/sqrt(head size) the scores lack, or its square root's inverse to divide by) and that no method
of its class ever reads again says it was: the scale was meant and left out. The warning is then
an error, naming the line that made the factor. Read from the module's own values and its
class's source; nothing is guessed from a name.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math

from ..analysis.code import parsed
from ..base.diagnostics import Diagnostic
from ..base.records import module_at
from ..base.source import display_path


def unapplied_scales(found: list[Diagnostic], model) -> list[Diagnostic]:
    """``found`` with each unscaled-attention warning made an error when the module that ran
    it holds an unread attribute equal to the scale it lacks."""
    if model is None or not any(_unscaled(d) for d in found):
        return found
    out = []
    for d in found:
        left = _left_out(d, model) if _unscaled(d) else None
        if left is None:
            out.append(d)
            continue
        name, value, file, line = left
        message = (f"{d.message}; the module makes it, `self.{name}` = {value:.4g} at "
                   f"{display_path(file)}:{line}, and never applies it")
        how = "multiply the scores (or q) by" if value < 1 else "divide the scores (or q) by"
        out.append(dataclasses.replace(d, severity="error", message=message,
                                       hint=f"Apply it: {how} `self.{name}` before the softmax."))
    return out


def _unscaled(d: Diagnostic) -> bool:
    factor = (d.data or {}).get("factor")
    return d.rule == "attention-scale" and d.severity == "warning" \
        and isinstance(factor, (int, float)) and math.isclose(factor, 1.0)


def _left_out(d: Diagnostic, model) -> tuple | None:
    """``(attribute, value, file, line)`` of the scale the module ``d`` ran in made in its
    constructor and never read, or None."""
    expected = (d.data or {}).get("expected")
    module = module_at(model, d.module)
    if module is None or not isinstance(expected, float) or expected <= 0:
        return None
    for name, value in vars(module).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            continue
        if not (math.isclose(value, expected, rel_tol=1e-6)
                or math.isclose(value, 1 / expected, rel_tol=1e-6)):
            continue
        made = _made_unread(type(module), name)
        if made is not None:
            return (name, float(value), *made)
    return None


def _made_unread(cls: type, name: str) -> tuple[str, int] | None:
    """``(file, line)`` where a constructor of ``cls`` (or of a base of the user's) assigns
    ``self.name``, when no other method of those classes reads it; else None."""
    made, read = None, False
    for klass in cls.__mro__:
        if klass is object or (klass.__module__ or "").startswith("torch"):
            continue
        tree = parsed(klass)
        try:
            start = inspect.getsourcelines(klass)[1]
            file = inspect.getsourcefile(klass)
        except (OSError, TypeError):
            return None
        if tree is None:
            return None
        for method in ast.walk(tree):
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(method):
                if isinstance(node, ast.Attribute) and node.attr == name \
                        and isinstance(node.value, ast.Name) and node.value.id == "self":
                    if isinstance(node.ctx, ast.Store) and method.name == "__init__":
                        made = made or (file, start + node.lineno - 1)
                    else:
                        read = True
            if isinstance(method, ast.FunctionDef) and method.name != "__init__" \
                    and _named_in_strings(method, name):
                read = True  # getattr(self, "scale"): read by name
    return made if made is not None and not read else None


def _named_in_strings(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(node))
