"""Where a wrong attention scale was chosen: the line that set the number a scaling op read.

A scale is a plain Python number, so the trace has no record of where it was made; the source
has. The statement of the op that applied the factor names it (``scores / self.sqrt_dim``,
``q * scale``); each ``self.`` attribute of it assigned once in the class, and each local name
assigned once in the function, to an expression that reads as a number (``math.sqrt(d_model)``,
``dim ** -0.5``) is where it was chosen. An attribute set from a constructor argument
(``self.temperature = temperature``) is followed to the one call in the file that passes it
(``ScaledDotProduct(temperature=d_model ** 0.5)``). When no single line is proven, nothing is
said.
"""

from __future__ import annotations

import ast
import glob
import os

from ..base.source import display_path, file_tree, source_line
from .fixes import _without_comment
from .scale_fixes import _assigned_once, _function_at, scalarish


def scale_origin(rec) -> tuple[str, int, str] | None:
    """(file, line, text) of the statement that chose the number the op ``rec`` scaled by, when
    it lies on another line than the op itself and the source proves one line."""
    filename, line = (rec.where[0] if rec.where else None), rec.line
    tree = file_tree(filename)
    if tree is None or not line:
        return None
    function = _function_at(filename, line)
    if function is None:
        return None
    statement = _statement_at(function, line)
    if statement is None:
        return None
    cls = _class_of(tree, function)
    once = _assigned_once(function)
    found: list[tuple[int, str]] = []
    # only a name that is itself a factor (an operand of * or /, what *= and /= apply, a keyword
    # such as ``scale=``) was chosen elsewhere: one raised to a power or handed to a function
    # there (``math.sqrt(d_model)``) is a size the factor is made from on this line
    factors: set[int] = set()
    for n in ast.walk(statement):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mult, ast.Div)):
            factors |= {id(n.left), id(n.right)}
        elif isinstance(n, (ast.AugAssign, ast.keyword)):
            factors.add(id(n.value))
    for node in ast.walk(statement):
        if id(node) not in factors:
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and isinstance(node.ctx, ast.Load) and cls is not None:
            origin = _attribute_origin(tree, cls, node.attr, filename)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in once:
            origin = _local_origin(function, node.id, line, filename)
        else:
            continue
        if origin is not None and (origin[0] is not None or origin[1] != line) and origin not in found:
            found.append(origin)
    if len(found) != 1:
        return None
    file, at, text = found[0]
    return file or rec.file, at, text


def _statement_at(function, line: int):
    best = None
    for node in ast.walk(function):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.If, ast.For,
                                                                 ast.While, ast.With, ast.Try)) \
                and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def _class_of(tree, function):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and function in node.body:
            return node
    return None


def _assignments(scope, target) -> list[ast.Assign]:
    """Assignments in ``scope`` whose one target satisfies ``target``."""
    return [node for node in ast.walk(scope) if isinstance(node, ast.Assign)
            and len(node.targets) == 1 and target(node.targets[0])]


def _text(filename: str, node) -> str:
    return _without_comment(source_line(filename, node.lineno)).strip()


def _attribute_origin(tree, cls, attr: str, filename: str):
    assigned = _assignments(cls, lambda t: isinstance(t, ast.Attribute) and t.attr == attr
                            and isinstance(t.value, ast.Name) and t.value.id == "self")
    if len(assigned) != 1:
        return None
    node = assigned[0]
    if _numberish(node.value):  # self.sqrt_dim = np.sqrt(dim)
        return None, node.lineno, _text(filename, node)
    if isinstance(node.value, ast.Name):  # self.temperature = temperature: the constructor's
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is not None and node.value.id in [a.arg for a in init.args.args]:
            return _passed(tree, cls.name, [a.arg for a in init.args.args], node.value.id, filename)
    return None


def _passed(tree, name: str, params: list[str], param: str, filename: str):
    """The one call of class ``name`` in the file (or, when it has none, in the Python files
    beside it), and the line where it passes ``param`` a number."""
    calls = [(filename, call) for call in _calls(tree, name)]
    if not calls:
        folder = os.path.dirname(os.path.abspath(filename))
        for other in sorted(glob.glob(os.path.join(folder, "*.py")))[:_SIBLINGS]:
            if os.path.abspath(other) != os.path.abspath(filename):
                calls += [(other, call) for call in _calls(file_tree(other), name)]
    if len(calls) != 1:
        return None
    where, call = calls[0]
    value = next((k.value for k in call.keywords if k.arg == param), None)
    position = params.index(param) - 1  # less self
    if value is None and 0 <= position < len(call.args):
        value = call.args[position]
    if value is None or not _numberish(value):
        return None
    return (None if where == filename else display_path(where), value.lineno,
            _without_comment(source_line(where, value.lineno)).strip())


#: Files beside a class's own that are read for the call that builds it.
_SIBLINGS = 40


def _calls(tree, name: str) -> list[ast.Call]:
    if tree is None:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name)]


def _numberish(node) -> bool:
    """A number as code writes one: ``scalarish``, or a numpy or math function of numbers and
    names (``np.power(d_model, 0.5)``)."""
    if scalarish(node):
        return True
    if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[0] in ("math", "np", "numpy"):
        return all(isinstance(a, (ast.Name, ast.Attribute, ast.Constant)) or _numberish(a)
                   for a in node.args)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return all(isinstance(a, (ast.Name, ast.Attribute, ast.Constant)) or _numberish(a)
                   for a in (node.left, node.right))
    return False


def _local_origin(function, name: str, line: int, filename: str):
    assigned = [node for node in _assignments(function, lambda t: isinstance(t, ast.Name) and t.id == name)
                if node.lineno < line]
    if len(assigned) != 1 or not _numberish(assigned[0].value):
        return None
    return None, assigned[0].lineno, _text(filename, assigned[0])
