"""The user's code as ``ast``: a function's or class's source parsed once, a ``def`` found in
it, a class's own constructor. Nothing is run; code whose source cannot be read gives None.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from functools import lru_cache


@lru_cache(maxsize=256)
def parsed(obj) -> ast.AST | None:
    """The parsed source of a function or class, or None. Names written ``__x`` inside a class
    are read as Python compiles them, ``_Class__x`` (a constructor's ``def __init__(self,
    __C)`` takes ``_MHAtt__C``, the name its signature gives), so that readers compare like
    with like."""
    try:
        source = textwrap.dedent(inspect.getsource(obj))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    owner = _defining_class(obj) if _PRIVATE.search(source) else None
    return _Mangled(owner).visit(tree) if owner else tree


#: a name Python mangles inside a class: two underscores first, not two last
_PRIVATE = re.compile(r"(?<!\w)__[A-Za-z_]\w*(?<!__)\b")


def _defining_class(obj) -> str | None:
    """The name of the class whose body holds ``obj`` (a class: itself), or None."""
    if isinstance(obj, type):
        return obj.__name__
    parts = (getattr(obj, "__qualname__", "") or "").split(".")
    return parts[-2] if len(parts) >= 2 and parts[-2] != "<locals>" else None


class _Mangled(ast.NodeTransformer):
    """``__x`` (not ``__x__``) as ``_Class__x``, in names, arguments and attributes."""

    def __init__(self, owner: str):
        self.prefix = "_" + owner.lstrip("_")

    def _name(self, name: str) -> str:
        if name.startswith("__") and not name.endswith("__") and self.prefix != "_":
            return self.prefix + name
        return name

    def visit_Name(self, node):
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        return node

    def visit_Attribute(self, node):
        node.attr = self._name(node.attr)
        self.generic_visit(node)
        return node


def function_def(tree: ast.AST | None, name: str = "__init__"):
    """The first ``def name`` in ``tree``, or None."""
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def own_init(cls: type):
    """``cls``'s own ``__init__`` (not one it inherits), or None."""
    init = cls.__dict__.get("__init__")
    return init if inspect.isfunction(init) else None


def definition(func) -> ast.AST | None:
    """The definition of the function (or bound method) ``func`` in its source, or None."""
    func = getattr(func, "__func__", func)
    return function_def(parsed(func), getattr(func, "__name__", "")) \
        if inspect.isfunction(func) else None


def _tests_none(node, name: str, ops) -> bool:
    """Whether ``node`` is ``name is None`` (or another of ``ops``: ``is not``)."""
    return isinstance(node, ast.Compare) and len(node.ops) == 1 \
        and isinstance(node.ops[0], ops) and isinstance(node.left, ast.Name) \
        and node.left.id == name and isinstance(node.comparators[0], ast.Constant) \
        and node.comparators[0].value is None


def compared_with_none(func, name: str) -> bool:
    """Whether ``func`` tests its argument ``name`` with ``is None`` / ``is not None``."""
    body = definition(func)
    return any(_tests_none(node, name, (ast.Is, ast.IsNot))
               for node in (ast.walk(body) if body is not None else ()))


def demanded(func, name: str) -> bool:
    """Whether ``func`` refuses to run without its argument ``name`` though it defaults to None
    (``assert mask is not None``, ``if mask is None: raise ...``): a required input. Of
    arguments one of which it demands (``if input_ids is None and inputs_embeds is None:
    raise``, or branches on each ``is not None`` that end in ``else: raise``), the first."""
    body = definition(func)
    order = [a.arg for a in body.args.args] if body is not None else []
    for node in body.body if body is not None else ():  # the forward's own statements
        if isinstance(node, ast.Assert) and _tests_none(node.test, name, ast.IsNot):
            return True
        if not isinstance(node, ast.If):
            continue
        if _tests_none(node.test, name, ast.Is) and not node.orelse \
                and any(isinstance(n, ast.Raise) for n in node.body):
            return True
        one_of = _one_of(node)
        if one_of and name == min(one_of, key=lambda n: order.index(n) if n in order else len(order)):
            return True
    return False


def _one_of(node: ast.If) -> list[str]:
    """The arguments one of which ``node`` demands: ``if a is None and b is None: raise``, or
    ``if/elif`` branches testing ``a is not None`` (each alone) whose last ``else`` raises."""
    test = node.test
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and not node.orelse \
            and any(isinstance(n, ast.Raise) for n in node.body):
        names = [v.left.id for v in test.values if isinstance(v, ast.Compare) and isinstance(v.left, ast.Name)
                 and _tests_none(v, v.left.id, ast.Is)]
        return names if len(names) == len(test.values) else []
    names, branch = [], node
    while isinstance(branch, ast.If):
        if isinstance(branch.test, ast.Compare) and isinstance(branch.test.left, ast.Name) \
                and _tests_none(branch.test, branch.test.left.id, ast.IsNot):
            names.append(branch.test.left.id)
        rest = branch.orelse
        if len(rest) == 1 and isinstance(rest[0], ast.If):
            branch = rest[0]
            continue
        return names if len(names) > 1 and rest and all(isinstance(n, ast.Raise) for n in rest) else []
    return []


def never_read(func, name: str, depth: int = 3) -> bool:
    """Whether ``func``'s code never reads its argument ``name`` (``forward(q, k, v,
    attn_mask)`` that ignores the mask): any value does, None among them. An argument handed
    as it is to a method of the same class (``self.forecast(x_enc, x_mark_enc, x_dec)``) is
    read only if that method reads it."""
    body = definition(func)
    if body is None:
        return False
    handed = {}  # id(name node) -> the method's parameter it lands in
    if depth > 0:
        for node in ast.walk(body):
            if isinstance(node, ast.Call):
                handed.update(_handed_to_own(func, node, name))
    for node in _loads(body.body, name):
        landed = handed.get(id(node))
        if landed is None or not never_read(landed[0], landed[1], depth - 1):
            return False
    return True


def _loads(statements, name: str, shadowed: bool = False):
    """The nodes of ``statements`` that read the argument ``name`` (or ``locals()``): those
    after a plain ``name = ...`` in the same block, or in a block inside it, read the new value,
    not the argument (``attn_mask = ProbMask(...)`` before ``attn_mask.mask``)."""
    for statement in statements:
        if shadowed:
            return
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            blocks = []  # a closure reads the argument wherever it is called: every load counts
        else:
            blocks = [getattr(statement, field) for field in ("body", "orelse", "finalbody")
                      if isinstance(getattr(statement, field, None), list)]
        blocks += [handler.body for handler in getattr(statement, "handlers", ())]
        inner = {id(n) for block in blocks for s in block for n in ast.walk(s)}
        for node in ast.walk(statement):  # the statement's own expressions (a test, an iterable)
            if id(node) not in inner and isinstance(node, ast.Name) \
                    and node.id in (name, "locals", "vars") and not isinstance(node.ctx, ast.Store):
                yield node
        for block in blocks:
            yield from _loads(block, name)
        shadowed = isinstance(statement, (ast.Assign, ast.AnnAssign)) and any(
            isinstance(t, ast.Name) and t.id == name
            for t in (statement.targets if isinstance(statement, ast.Assign) else [statement.target]))


def _handed_to_own(func, call: ast.Call, name: str) -> dict:
    """``{id(argument node): (method, parameter)}`` for ``name`` handed as it is to a method
    of ``func``'s own class in ``call`` (``self.forecast(x, mask)``)."""
    if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "self"):
        return {}
    owner = owner_class(func)
    method = getattr(owner, call.func.attr, None) if owner is not None else None
    if not inspect.isfunction(method):
        return {}
    try:
        params = [p for p in inspect.signature(method).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]
        names = set(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        return {}
    out = {}
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if isinstance(arg, ast.Name) and arg.id == name and i < len(params):
            out[id(arg)] = (method, params[i].name)
    for kw in call.keywords:
        if kw.arg in names and isinstance(kw.value, ast.Name) and kw.value.id == name:
            out[id(kw.value)] = (method, kw.arg)
    return out


def owner_class(func) -> type | None:
    """The class a method was defined in, found by its qualified name, or None."""
    func = getattr(func, "__func__", func)
    parts = getattr(func, "__qualname__", "").split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    owner = getattr(func, "__globals__", {}).get(parts[0])
    for part in parts[1:-1]:
        owner = getattr(owner, part, None)
    return owner if isinstance(owner, type) else None


def only_tested(func, name: str) -> bool:
    """Whether ``func`` reads its argument ``name`` only as a truth value (``if train and ...``,
    ``not train``): a switch, never a tensor."""
    body = definition(func)
    if body is None:
        return False
    tested = _tested_ids(body)
    uses = [node for node in ast.walk(body) if isinstance(node, ast.Name) and node.id == name
            and isinstance(node.ctx, ast.Load)]
    return bool(uses) and all(id(node) in tested for node in uses)


def _tested_ids(tree: ast.AST) -> set[int]:
    """The ids of the expressions ``tree`` reads as truth values (an ``if``'s, a ``while``'s,
    an ``assert``'s test, the operands of ``and``/``or``/``not``)."""
    tested: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tested.add(id(node.test))
        elif isinstance(node, ast.BoolOp):
            tested.update(id(v) for v in node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            tested.add(id(node.operand))
    return tested


def only_switched(cls: type, name: str) -> bool:
    """Whether ``cls`` reads its constructor argument ``name`` only as a truth value: tested
    where the constructor reads it (``if adaLN:``), or kept as it is (``self.adaLN = adaLN``)
    and that attribute only tested wherever the class reads it: an on/off switch."""
    owner = next((c for c in cls.__mro__ if own_init(c) is not None), None)
    if owner is None or owner.__module__.split(".")[0] == "torch":
        return False  # a constructor the class inherits from one of torch's layers
    body = definition(own_init(owner))
    # the class and the classes it inherits the constructor through read the attribute
    trees = [parsed(c) for c in cls.__mro__[:cls.__mro__.index(owner) + 1]]
    tree = ast.Module(body=[t for t in trees if t is not None], type_ignores=[])
    if body is None or not tree.body:
        return False
    kept: dict[int, str] = {}  # id(the name's node) -> the attribute it is kept as
    for node in ast.walk(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.value, ast.Name) and node.value.id == name \
                and isinstance(node.targets[0], ast.Attribute) \
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self":
            kept[id(node.value)] = node.targets[0].attr
    tested = _tested_ids(body)
    reads = [n for n in ast.walk(body) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    if not reads or any(id(n) not in tested and id(n) not in kept for n in reads):
        return False
    attributes = {kept[id(n)] for n in reads if id(n) in kept}
    tested_here = any(id(n) in tested for n in reads)
    tested = _tested_ids(tree)
    read = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in attributes
            and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) and n.value.id == "self"]
    # tested somewhere, and never read otherwise: a value only kept says nothing
    return (tested_here or bool(read)) and all(id(n) in tested for n in read)


def unpacked_into(cls: type, name: str) -> int:
    """How many names the class's code unpacks the constructor argument ``name`` into
    (``H, W = self.input_resolution`` after ``self.input_resolution = input_resolution``, or
    ``H, W = input_resolution``), or how many items it reads by constant indices alone
    (``patch_size[0] * patch_size[1]``): a pair of sizes is 2; 0 when it is never unpacked."""
    tree = parsed(cls)
    if tree is None:
        return 0
    pairs = [(t, v) for node in ast.walk(tree) if isinstance(node, ast.Assign) and len(node.targets) == 1
             for t, v in (zip(node.targets[0].elts, node.value.elts)
                          if isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple)
                          and len(node.targets[0].elts) == len(node.value.elts)
                          else [(node.targets[0], node.value)])]  # ``self.a, self.b = a, b`` too
    kept = {f"self.{t.attr}" for t, v in pairs if isinstance(v, ast.Name) and v.id == name
            and isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Tuple) \
                and ast.unparse(node.value) in kept | {name} \
                and not any(isinstance(e, ast.Starred) for e in node.targets[0].elts):
            return len(node.targets[0].elts)
    # or read by constant indices alone (``patch_size[0] * patch_size[1]``): as many as the last
    indices = [node.slice.value if isinstance(node.slice, ast.Constant) else None
               for node in ast.walk(tree) if isinstance(node, ast.Subscript)
               and ast.unparse(node.value) in kept | {name}]
    if indices and all(type(i) is int and 0 <= i < 4 for i in indices):
        return max(indices) + 1
    return 0
