"""discarded-result for an argument the forward drops: the caller passes a value, and every
place the forward reads it binds a name that nothing reads afterwards.

    def forward(self, x, residual=None):
        residual = default(residual, x)      # the only read of residual: a dead store
        ...
        return gate * h + (1 - gate) * x     # meant: (1 - gate) * residual

The value the caller passes (``layer(norm(x), x)``) can reach nothing the module returns, on any
path. Judged from the source of a forward that ran and of the line that called it, never from
names: a parameter the forward never reads (an argument kept for a common signature) says
nothing, nor one read anywhere else (a test, an attribute, a call, a branch taken on another
run), nor one the caller leaves out, passes as None or as a constant (a flag). A test against None
(``if mask is not None:``) reads nothing the argument holds.
"""

from __future__ import annotations

import ast

from ..analysis.facts import Analysis
from ..base.source import display_path, file_tree, resolve_site
from .registry import diagnostic
from .statements import Binding, dead_store, expression_at


def dropped_argument_findings(analysis: Analysis) -> list:
    """discarded-result for arguments a forward drops: see the module's docstring."""
    if analysis.exception is not None or any(rec.error is not None for rec in analysis.records):
        return []  # the code after a failure never ran
    # id of the code of each user forward that ran -> (that code, its first record); by identity:
    # code objects compare equal across files
    forwards: dict = {}
    for rec in analysis.records:
        site = rec.site
        if site is not None and not site[2] and site[0].co_name == "forward":
            forwards.setdefault(id(site[0]), (site[0], rec))
    if not forwards:
        return []
    found = []
    calls: dict = {}  # id of a forward's code -> the user's lines that called a module running it
    for cls, sites in analysis.module_calls.items():
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        if id(code) in forwards and forwards[id(code)][0] is code:
            calls.setdefault(id(code), set()).update(sites)
    for key, (code, first) in forwards.items():
        sites = calls.get(key)
        function = _function_of(code) if sites else None
        if function is None:
            continue
        for param, store in _dropped(function):
            call = next((c for c in map(_call_at, sorted(sites, key=_order))
                         if c is not None and _passes(c[1], function, param)), None)
            if call is not None:
                found.append(_finding(code.co_filename, first, param, store, call))
    return found


def _order(site) -> tuple:
    filename, line, col, _ = resolve_site(site[0], site[1])
    return filename or "", line or 0, col or 0


def _function_of(code) -> ast.FunctionDef | None:
    """The ``def`` a code object was compiled from (its first line is a decorator's, if any)."""
    tree = file_tree(code.co_filename)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if code.co_firstlineno in (node.lineno, first):
                return node
    return None


def _parameters(function: ast.FunctionDef) -> list[str]:
    """The parameters a caller can pass that may hold a tensor, ``self`` left out: not one
    whose default or annotation says it is a flag, a count or a name
    (``output_attentions: Optional[bool] = None``, ``use_cache=False``): a switch resolved and
    then not needed on a path computes nothing."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):],
                        args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    named = positional[1:] + args.kwonlyargs
    return [a.arg for a in named if not _plain(a.annotation, defaults.get(a.arg))]


#: words of an annotation that say an argument is no tensor
_PLAIN_TYPES = frozenset({"bool", "int", "float", "str"})


def _plain(annotation, default) -> bool:
    """Whether an annotation or a default says the argument is a number, a flag or a name."""
    if isinstance(default, ast.Constant) and default.value is not None:
        return True
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} if annotation else set()
    names |= {n.value for n in ast.walk(annotation) if isinstance(n, ast.Constant)
              and isinstance(n.value, str)} if annotation else set()
    return bool(names) and names <= _PLAIN_TYPES | {"Optional", "None", "Union"}


def _dropped(function: ast.FunctionDef) -> list[tuple[str, ast.stmt]]:
    """``(parameter, the statement that reads it)`` for each parameter that is read only in the
    value of assignments to a single name that are dead stores (the first such statement)."""
    statements = _statements(function.body)
    tests = _none_tests(function)
    out = []
    for param in _parameters(function):
        reads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == param
                 and isinstance(n.ctx, ast.Load) and n not in tests]
        if not reads:
            continue  # never read: an argument kept for a common signature
        stores = []
        for read in reads:
            store = next((s for s in statements if _inside_value(read, s)), None)
            if store is None:
                break  # read in a test, a call, a return, a nested function...
            stores.append(store)
        else:
            if all(_dead(function, s) for s in stores):
                out.append((param, min(stores, key=lambda s: s.lineno)))
    return out


def _none_tests(function: ast.FunctionDef) -> set:
    """The names only compared with None (``mask is not None``): what they hold is not read."""
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            left, right = node.left, node.comparators[0]
            for name, other in ((left, right), (right, left)):
                if isinstance(name, ast.Name) and isinstance(other, ast.Constant) \
                        and other.value is None:
                    found.add(name)
    return found


def _statements(body: list) -> list[ast.stmt]:
    """Every assignment to one plain name in a block and the blocks inside it, nested functions
    and classes left out (what they read is theirs)."""
    found = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                or isinstance(node, ast.AnnAssign) and node.simple and node.value is not None:
            found.append(node)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                found.extend(_statements(inner))
        for handler in getattr(node, "handlers", ()):
            found.extend(_statements(handler.body))
    return found


def _inside_value(read: ast.Name, statement: ast.stmt) -> bool:
    """Whether ``read`` is in the value of ``statement``, and not in a lambda or a
    comprehension there (which may run later, or never)."""
    for node in ast.walk(statement.value):
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)) and any(n is read for n in ast.walk(node)):
            return False
        if node is read:
            return True
    return False


def _target(statement: ast.stmt) -> str:
    return (statement.targets[0] if isinstance(statement, ast.Assign) else statement.target).id


def _dead(function: ast.FunctionDef, statement: ast.stmt) -> bool:
    name = _target(statement)
    if name.startswith("_"):
        return False  # dropped on purpose
    return dead_store(Binding(statement, function, name, statement.value)) is not None


def _call_at(site) -> tuple | None:
    """``(filename, the call expression)`` of the line that called a module, or None."""
    filename, line, col, end_col = resolve_site(site[0], site[1])
    node = expression_at(filename, line, col, end_col)
    return (filename, node) if isinstance(node, ast.Call) else None


def _passes(call: ast.Call, function: ast.FunctionDef, param: str) -> bool:
    """Whether ``call`` gives ``param`` a computed value (not None, not a constant: a flag)."""
    given = None
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args][1:]]
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return False  # where the rest go is not written
        if i < len(positional) and positional[i] == param:
            given = arg
    for keyword in call.keywords:
        if keyword.arg == param:
            given = keyword.value
    return given is not None and not isinstance(given, ast.Constant)


def _finding(filename: str, first, param: str, store: ast.stmt, call: tuple):
    name = _target(store)
    called_in, node = call
    where = display_path(filename)
    caller = display_path(called_in)
    at = f"line {node.lineno}" if caller == where else f"{caller}:{node.lineno}"
    into = f"{name}, which" if name == param else f"{name} ({ast.unparse(store).strip()}), and {name}"
    message = (f"the {param} the caller passes ({at}: {ast.unparse(node)}) is only read at line "
               f"{store.lineno} into {into} is never read afterwards: what the caller passes "
               f"reaches nothing the forward returns")
    hint = (f"Use {name} where it was meant to go (the value the forward computes from in its "
            f"place), or stop passing {param} at {at}.")
    return diagnostic("discarded-result", message, hint, rec=first, file=where, line=store.lineno,
                      op=None, statement="dropped-argument")
