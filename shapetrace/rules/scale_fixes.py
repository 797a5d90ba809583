"""attention-scale's corrected lines: the factor on the user's line replaced, dropped or added.

The head size is written the way the user wrote it when the source proves it: an expression
(``self.head_size``, ``C // self.n_head``, ``head_dim``) that the same function passed to a
``view``/``reshape`` earlier in the trace, at the position where that op produced an axis of the
head size, and that cannot have changed since (``self`` attributes, names assigned once).
Otherwise the query operand's own size (``q.size(-1)``), when the scores read it by name. When
neither holds there is no corrected line.
"""

from __future__ import annotations

import ast
import linecache

from ..base.source import file_tree
from .fixes import Fix, Segment, checked, segment

#: Reshape methods whose positional arguments are the new sizes.
_SIZED = {"view", "reshape"}
_SIZED_OPS = {"Tensor.view", "Tensor.reshape"}


def scalarish(node) -> bool:
    """Whether an expression reads as a plain number: ``math.sqrt(C)``, ``self.n_head ** -0.5``,
    ``1.0 / d``. Tensors (names, calls of torch functions, matrix products) do not."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.UnaryOp):
        return scalarish(node.operand)
    if isinstance(node, ast.Call):
        return ast.unparse(node.func).startswith("math.")
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return isinstance(node.right, (ast.Constant, ast.UnaryOp))
        return scalarish(node.left) and scalarish(node.right) \
            and not isinstance(node.op, ast.MatMult)
    return False


def imports_math(filename: str) -> bool:
    return any(line.strip() == "import math" for line in linecache.getlines(filename))


# --- the head size, in the user's words -------------------------------------------------------

def _function_at(filename: str, lineno: int):
    """The innermost function whose body holds ``lineno``, in the file's syntax tree."""
    tree = file_tree(filename)
    if tree is None:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def _assigned_once(function) -> set[str]:
    """Names bound exactly once in ``function`` (its parameters count), never in a loop."""
    counts: dict[str, int] = {}
    args = function.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            counts[a.arg] = counts.get(a.arg, 0) + 1
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in ast.walk(node.target):
                if isinstance(name, ast.Name):
                    counts[name.id] = counts.get(name.id, 0) + 2  # bound again each pass
    return {name for name, n in counts.items() if n == 1}


def _stable(node, once: set[str]) -> bool:
    """An expression of ``self`` attributes, names bound once, integers and arithmetic."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in once
    if isinstance(node, ast.Attribute):
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        return isinstance(base, ast.Name) and base.id == "self"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mult, ast.Add,
                                                            ast.Sub)):
        return _stable(node.left, once) and _stable(node.right, once)
    return False


def head_size_expression(records, before: int, filename: str, lineno: int, d: int) -> str | None:
    """The user's own expression for the head size ``d``, proven as the module docstring says."""
    function = _function_at(filename, lineno)
    if function is None:
        return None
    once = _assigned_once(function)
    by_line: dict[int, list] = {}
    for rec in records:
        if rec.index >= before:
            break
        if rec.op in _SIZED_OPS and rec.outputs and rec.where[0] == filename \
                and function.lineno <= (rec.line or 0) <= (function.end_lineno or 0):
            by_line.setdefault(rec.line, []).append(rec.outputs[0].shape)
    found: list[str] = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _SIZED and not node.keywords):
            continue
        args = node.args[0].elts if len(node.args) == 1 and isinstance(
            node.args[0], (ast.Tuple, ast.List)) else node.args
        if node.lineno != node.end_lineno or any(isinstance(a, ast.Starred) for a in args):
            continue
        shapes = [s for s in by_line.get(node.lineno, []) if len(s) == len(args)]
        if not shapes or len({tuple(s) for s in shapes}) != 1 or list(shapes[0]).count(d) != 1:
            continue  # no record of this call, calls on the line that disagree, or two axes of d
        for position, arg in enumerate(args):
            if shapes[0][position] == d and _stable(arg, once) \
                    and not (isinstance(arg, ast.Constant)):
                found.append(ast.unparse(arg))
    if not found:
        return None
    return min(found, key=lambda text: (not text.replace(".", "").replace("_", "").isalnum(),
                                         len(text)))


def query_size_text(product, d: int) -> str | None:
    """``q.size(-1)``: the head size read off the query operand of the scores product, when
    the user named it and its last axis is the head size."""
    seg = segment(product)
    if seg is None:
        return None
    node = seg.node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        left = node.left
    elif isinstance(node, ast.Call) and node.args:
        left = node.args[1] if product.op == "torch.einsum" and len(node.args) > 2 else node.args[0]
        if product.op == "torch.einsum" and len(node.args) <= 2:
            return None
    else:
        return None
    first = product.inputs[1 if product.op.endswith("baddbmm") else 0]
    if not isinstance(left, ast.Name) or not first.shape or first.shape[-1] != d:
        return None
    return f"{left.id}.size(-1)"


def head_size_text(records, product, d: int) -> str | None:
    """The head size as the fix should write it: the user's own expression, else ``q.size(-1)``."""
    filename, lineno = product.where[0], product.where[1]
    if filename and lineno:
        own = head_size_expression(records, product.index, filename, lineno, d)
        if own is not None:
            return own
    return query_size_text(product, d)


# --- the rewrites -----------------------------------------------------------------------------

def _wrap(text: str) -> str:
    return text if text.replace(".", "").replace("_", "").isalnum() else f"({text})"


def scale_text(head_size: str, divide: bool, filename: str) -> str:
    """``math.sqrt(hs)`` to divide by (or ``hs ** 0.5``), ``hs ** -0.5`` to multiply by."""
    if divide:
        return f"math.sqrt({head_size})" if imports_math(filename) else f"{_wrap(head_size)} ** 0.5"
    return f"{_wrap(head_size)} ** -0.5"


def replace_factor(rec, head_size: str | None) -> Fix | None:
    """The line of a scaling op rewritten: its factor replaced by 1/sqrt(head size) (given as
    ``head_size``), or dropped (``head_size`` None: scaled twice)."""
    seg = segment(rec)
    if seg is None or not isinstance(seg.node, ast.BinOp):
        return None
    node = seg.node
    if isinstance(node.op, ast.Div):
        if not scalarish(node.right) or scalarish(node.left):
            return None
        scalar, tensor = node.right, node.left
    elif isinstance(node.op, ast.Mult):
        if scalarish(node.right) == scalarish(node.left):
            return None
        scalar, tensor = (node.right, node.left) if scalarish(node.right) else (node.left, node.right)
    else:
        return None
    if head_size is None:
        kept = seg.piece(tensor)
        if isinstance(tensor, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)):
            kept = f"({kept})"
        return seg.replace(node, kept)
    return seg.replace(scalar, scale_text(head_size, isinstance(node.op, ast.Div), seg.filename))


def _parent_binds_tighter(seg: Segment) -> bool:
    """Whether the text around the product would take a ``* s`` appended to it apart: the
    product is the right operand of a binary op, the operand of ``-``/``**``, or the like."""
    line = seg.line
    stripped = line.lstrip()
    offset = len(line) - len(stripped)
    try:
        tree = ast.parse(stripped)
    except SyntaxError:
        return True  # a line that does not parse alone: not sure
    lines = stripped.encode()
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if not hasattr(child, "col_offset") or child.lineno != 1 or child.end_lineno != 1:
                continue
            start = len(lines[:child.col_offset].decode(errors="replace")) + offset
            end = len(lines[:child.end_col_offset].decode(errors="replace")) + offset
            if (start, end) != (seg.start, seg.end):
                continue
            if isinstance(node, ast.BinOp):
                return child is node.right or isinstance(node.op, ast.Pow)
            return isinstance(node, (ast.UnaryOp, ast.Attribute, ast.Subscript, ast.Await))
    return False


def add_factor(product, head_size: str) -> Fix | None:
    """The scores product rewritten with the factor it lacks: ``q @ k.mT`` ->
    ``q @ k.mT / math.sqrt(self.head_size)``."""
    seg = segment(product)
    if seg is None or not isinstance(seg.node, (ast.BinOp, ast.Call)):
        return None
    if isinstance(seg.node, ast.BinOp) and not isinstance(seg.node.op, ast.MatMult):
        return None
    if _parent_binds_tighter(seg):
        return None
    divide = imports_math(seg.filename)
    op = " / " if divide else " * "
    return seg.replace(seg.node, f"{seg.text}{op}{scale_text(head_size, divide, seg.filename)}")


def drop_keyword(rec, name: str) -> Fix | None:
    """``F.scaled_dot_product_attention(q, k, v, scale=0.1)`` -> ``...(q, k, v)``."""
    seg = segment(rec)
    if seg is None or not isinstance(seg.node, ast.Call):
        return None
    keyword = next((kw for kw in seg.node.keywords if kw.arg == name), None)
    if keyword is None:
        return None
    try:
        a, b = seg.offsets(keyword)
    except ValueError:
        return None
    before = seg.line[:a].rstrip()
    after = seg.line[b:]
    if before.endswith(","):
        before = before[:-1]
    elif after.lstrip().startswith(","):
        after = after.lstrip()[1:].lstrip()
    else:
        return None
    return checked(seg.lineno, before + after, seg.filename)
