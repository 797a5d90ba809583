"""What the user's code does with a value, read from its source: the statement that binds it,
and whether that binding is a dead store (the name is assigned again, or never read, before
anything reads it).

The dataflow (``analysis.liveness``) says a value reached nothing in this run; this says the
code could not have used it on any path, so that a value dropped only on the path this run took
(``k = self.to_k(x)``, then ``if cache: k = cache_k``) is not called a bug.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..base.source import file_tree


@dataclass(frozen=True)
class Binding:
    """How a value is bound at its line."""

    statement: ast.stmt
    function: ast.FunctionDef | ast.AsyncFunctionDef
    name: str | None  # the variable it is bound to; None for an expression statement
    expression: ast.expr  # the call or op that made it


@dataclass(frozen=True)
class DeadStore:
    """A binding that nothing reads: ``replaced_by`` is the statement that assigns the name
    again first (None: the name is never read afterwards, or there is no name)."""

    binding: Binding
    replaced_by: ast.stmt | None
    #: the statement that maps the name onto one never read (``q, k, v = map(f, (q, k, v))``)
    mapped_at: ast.stmt | None = None


def binding_at(filename: str | None, line: int | None, col: int | None, end_col: int | None,
               index: int | None = None) -> Binding | None:
    """The statement whose whole value is the expression at ``(line, col, end_col)``, inside a
    function: an expression statement, or an assignment to one name (``index``: to the
    ``index``-th name of a tuple target, ``out, cache = block(x)``). None otherwise: the value
    is passed on to something else on its line, or the code is not a function's."""
    tree = file_tree(filename)
    if tree is None or line is None or col is None:
        return None
    path = _path_to(tree, line, col, end_col)
    if path is None:
        return None
    function, statement = path
    value = getattr(statement, "value", None)
    if value is not None and index in (None, 0) and isinstance(value, (ast.Tuple, ast.List)) \
            and isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], (ast.Tuple, ast.List)) \
            and len(statement.targets[0].elts) == len(value.elts):
        # ``q, k, v = self.wq(x), self.wk(y), self.wv(y)``: each call bound to its own name
        for target, element in zip(statement.targets[0].elts, value.elts):
            if _is_expression(element, line, col, end_col):
                return Binding(statement, function, target.id, element) \
                    if isinstance(target, ast.Name) else None
    if value is None or not _is_expression(value, line, col, end_col):
        return None
    if isinstance(statement, ast.Expr):
        return Binding(statement, function, None, value) if index in (None, 0) else None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign) and statement.simple:
        target = statement.target
    else:
        return None
    if index is None:
        return Binding(statement, function, target.id, value) \
            if isinstance(target, ast.Name) else None
    if not isinstance(target, (ast.Tuple, ast.List)) or index >= len(target.elts) \
            or any(isinstance(e, ast.Starred) for e in target.elts):
        return None
    element = target.elts[index]
    return Binding(statement, function, element.id, value) \
        if isinstance(element, ast.Name) else None


def dead_store(binding: Binding, depth: int = 0) -> DeadStore | None:
    """The binding as a dead store, or None when the name may be read afterwards on some path
    (or the function reaches its variables some other way: ``locals()``, a closure). A name
    read only to be mapped onto a name of its own (``x, k, v = map(f, (x, k, v))``) is dead
    when that name is."""
    name = binding.name
    if name is None:
        return DeadStore(binding, None)
    function = binding.function
    if _reached_otherwise(function, name):
        return None
    chain = _chain(function, binding.statement)
    if chain is None:
        return None
    for body, i, owner in reversed(chain):  # innermost block first, then the blocks around it
        for later in body[i + 1:]:
            if _reads(later, name):
                if _only_updates(later, name):  # ``v = v.expand(...)``, under an ``if`` or not:
                    continue  # the value flows into the name alone, judged by what follows
                onto = _mapped_onto(later, name)  # ``q, k, v = map(f, (q, k, v))``
                if onto is not None and depth < 3 and dead_store(
                        Binding(later, function, onto, later.value), depth + 1) is not None:
                    return DeadStore(binding, None, later)
                return None
            if _assigns(later, name):
                return DeadStore(binding, later)
            if _stores(later, name):
                return None  # assigned on some paths only (a branch, a loop, a with ... as)
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return DeadStore(binding, None)
        if isinstance(owner, (ast.For, ast.AsyncFor, ast.While)):
            # the next turn runs the loop's test and the lines above it again, then its else
            again = [getattr(owner, "test", None), getattr(owner, "target", None),
                     *body[:i], *owner.orelse]
            if body is not owner.body or any(n is not None and (_reads(n, name) or _stores(n, name))
                                             for n in again):
                return None
        elif not isinstance(owner, (ast.If, ast.With, ast.AsyncWith)):
            return None  # a handler may read it after an exception
    return None


def returned_later(binding: Binding) -> bool:
    """Whether a ``return`` of the binding's function after it hands the bound name back
    (``return out, agent_out``), on whatever path reaches it."""
    name = binding.name
    if name is None:
        return False
    after = binding.statement.end_lineno or binding.statement.lineno
    return any(isinstance(node, ast.Return) and node.value is not None and node.lineno > after
               and _reads(node.value, name) for node in _own_nodes(binding.function))


def _own_nodes(function):
    """The nodes of ``function``'s body, not those of functions or lambdas defined in it."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        stack += [child for child in ast.iter_child_nodes(node)
                  if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                            ast.ClassDef))]


def expression_at(filename: str | None, line: int | None, col: int | None,
                  end_col: int | None) -> ast.expr | None:
    """The expression written exactly at a position, or None."""
    tree = file_tree(filename)
    if tree is None or line is None or col is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and _is_expression(node, line, col, end_col):
            return node
    return None


def reads_of(node: ast.AST) -> list[str]:
    """The names an expression reads, in the order written (each once)."""
    found: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in found:
            found.append(n.id)
    return found


# --- reading the tree -------------------------------------------------------------------------

def statement_at(filename: str | None, line: int) -> tuple[ast.AST, ast.stmt] | None:
    """``(innermost function, innermost statement)`` at a line of a file (a frame's current
    line), or None outside any function."""
    tree = file_tree(filename)
    return None if tree is None else _path_to(tree, line, _ANY_COLUMN, None)


#: a column past any on a line: every statement that starts on the line spans it
_ANY_COLUMN = 1 << 30


def _path_to(tree, line, col, end_col):
    """``(innermost function, innermost statement)`` around a position, or None."""
    function = statement = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and _spans(node, line, col, end_col):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if function is None or _inside(node, function):
                    function = node
            elif statement is None or _inside(node, statement):
                statement = node
    if function is None or statement is None or not _inside(statement, function):
        return None
    return function, statement


def _inside(node, other) -> bool:
    return (node.lineno, node.col_offset) >= (other.lineno, other.col_offset) and \
        (node.end_lineno, node.end_col_offset) <= (other.end_lineno, other.end_col_offset)


def _spans(node, line, col, end_col) -> bool:
    if not node.lineno <= line <= node.end_lineno:
        return False
    if node.lineno == line and node.col_offset > col:
        return False
    if node.end_lineno == line and end_col is not None and node.end_col_offset < end_col:
        return False
    return True


def _is_expression(value: ast.expr, line, col, end_col) -> bool:
    """Whether ``value`` is exactly the expression at the position (over lines or not)."""
    if (value.lineno, value.col_offset) != (line, col):
        return False
    if end_col is None:
        return value.end_lineno != value.lineno
    return value.end_lineno == line and value.end_col_offset == end_col


def _chain(function, statement):
    """``[(body, index, owner), ...]`` from the function's body down to the block that holds
    ``statement`` (``body[index] is statement`` in the last): each block with the statement
    that owns it (the function, an ``if``, a loop, a ``try``...)."""
    def walk(body):
        for i, node in enumerate(body):
            if node is statement:
                return [(body, i)]
            blocks = [getattr(node, f, None) for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(node, "handlers", ())]
            for inner in blocks:
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    found = walk(inner)
                    if found is not None:
                        return [(body, i), *found]
        return None
    found = walk(function.body)
    if found is None:
        return None
    owners = [function] + [body[i] for body, i in found[:-1]]
    return [(body, i, owner) for (body, i), owner in zip(found, owners)]


def _mapped_onto(statement: ast.stmt, name: str) -> str | None:
    """The name ``name``'s value is mapped onto by ``a, b, c = map(f, (a, b, c))`` (``f`` a
    lambda or a function named, each element of the tuple read once, in order): the target at
    its place, when the statement reads ``name`` nowhere else. None for any other statement."""
    value = getattr(statement, "value", None)
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], (ast.Tuple, ast.List))
            and isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "map" and len(value.args) == 2 and not value.keywords
            and isinstance(value.args[1], (ast.Tuple, ast.List))):
        return None
    targets, items = statement.targets[0].elts, value.args[1].elts
    if len(targets) != len(items) or _reads(value.args[0], name):
        return None
    places = [i for i, item in enumerate(items) if _reads(item, name)]
    if len(places) != 1 or not isinstance(items[places[0]], ast.Name):
        return None
    target = targets[places[0]]
    return target.id if isinstance(target, ast.Name) else None


def _only_updates(statement: ast.stmt, name: str) -> bool:
    """Whether every read of ``name`` in ``statement`` makes a new value of ``name`` itself
    from it by its own methods or indexing (``v = v.expand(...)``, ``x = x[:, :T]``), alone or
    in the branches of an ``if`` whose test does not read it: the old value reaches nothing
    but the name, and is used only if the new one is. Handed to any call (``v =
    cache.update(v)``), it may be kept there: a use."""
    if isinstance(statement, ast.Assign):
        return len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name) \
            and statement.targets[0].id == name and _made_from(statement.value, name)
    if isinstance(statement, ast.If) and not _reads(statement.test, name):
        return all(_only_updates(s, name) or not _reads(s, name)
                   for s in (*statement.body, *statement.orelse))
    return False


def _made_from(expr: ast.expr, name: str) -> bool:
    """Whether ``expr`` reads ``name`` only as the base of a chain of methods, attributes and
    indexing on it (``v.expand(b, t, h, d).contiguous()``)."""
    while True:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if any(_reads(a, name) for a in (*expr.args, *(k.value for k in expr.keywords))):
                return False
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript):
            if _reads(expr.slice, name):
                return False
            expr = expr.value
        elif isinstance(expr, ast.Attribute):
            expr = expr.value
        else:
            return isinstance(expr, ast.Name) and expr.id == name


def _reads(node: ast.AST, name: str) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Store):
            return True
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) \
                and n.target.id == name:
            return True
    return False


def _stores(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for n in ast.walk(node))


def _assigns(statement: ast.stmt, name: str) -> bool:
    """Whether a plain assignment binds ``name`` (unconditionally, at this level)."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return False
    return any(_stores(t, name) for t in targets)


def _reached_otherwise(function, name: str) -> bool:
    """Whether the function may reach ``name`` other than by reading it in order: declared
    global or nonlocal, read by a nested function or lambda (a closure runs later), or the
    whole namespace handed over (``locals()``, ``vars()``, ``eval``)."""
    for node in ast.walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("locals", "vars", "eval", "exec"):
            return True
        if node is not function and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda)) and _reads(node, name):
            return True
    return False
