"""Where a forward hands one of its arguments: the functions of the user's code that receive it.

``forward(self, x, mask)`` often reads nothing of ``mask`` itself: it hands it on, to a method
(``self.attention(q, k, v, mask)``), a static method or a function of its module
(``Block.attention(q, k, v, mask, self.dropout)``), or a submodule whose class its constructor
names (``self.attn = Attention(...)`` then ``self.attn(x, mask=mask)``; ``self.block = block``
with ``block: Attention`` annotated), inside a lambda or not. :func:`handed` follows those
calls (``ast``; nothing is run) a few levels down and yields each function with the name the
argument has there, so that what the code does with it (``analysis.masks``) is read where it is
done. A call whose callee cannot be resolved is skipped: the reading says less, never more.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator

from .code import function_def as _function_def
from .code import own_init as _init_of
from .code import parsed as _tree

#: how many calls deep an argument is followed
DEPTH = 4


def handed(func, name: str, owner: type | None = None, depth: int = DEPTH, built=None,
           restated=None) -> Iterator[tuple[object, str]]:
    """``(function, parameter name)`` for ``func`` itself and every function of the user's code
    it hands its argument ``name`` to, followed ``depth`` calls down. ``built(cls, param)``, when
    given, names the module class a constructor argument stored as a submodule is (as the
    project's code builds it). ``restated(expr, names)``, when given, says whether an expression
    stands for the argument (one of ``names``) unchanged in what matters (a mask reshaped:
    ``mask[:, None]``): such an expression, or a local assigned one, is handed on as it."""
    for func, there, _ in _reached(func, name, owner, depth, built, restated):
        yield func, there


def handed_levels(func, name: str, owner: type | None = None, depth: int = DEPTH, built=None,
                  restated=None) -> list[list[tuple[object, str]]]:
    """What :func:`handed` yields, by how many calls down each receiver is: ``[[(func,
    name)], [the receivers of its calls], ...]``, one walk."""
    levels: list[list[tuple[object, str]]] = [[] for _ in range(depth + 1)]
    for found, there, level in _reached(func, name, owner, depth, built, restated):
        levels[level].append((found, there))
    return levels


def _reached(func, name: str, owner, depth: int, built, restated):
    """``(function, parameter name, calls down)`` breadth first: see :func:`handed`."""
    seen: set[tuple[int, str]] = set()
    todo = [(getattr(func, "__func__", func), name, owner, depth)]
    while todo:
        func, name, owner, left = todo.pop(0)
        if (id(func), name) in seen or not inspect.isfunction(func):
            continue
        seen.add((id(func), name))
        yield func, name, depth - left
        if left <= 0:
            continue
        body = _function_def(_tree(func), func.__name__)
        if body is None:
            continue
        same = restated or _named
        names = standing_for(body, name, same)
        loops = _layer_loops(body)
        for node in ast.walk(body):
            if isinstance(node, ast.Call):
                todo.extend((callee, param, cls, left - 1) for callee, param, cls
                            in _receivers(node, names, same, func, owner, built, loops))


def _named(node: ast.expr, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def standing_for(body: ast.AST, name: str, same) -> set[str]:
    """``name`` and the local names assigned from it alone (``same``: what stands for it)."""
    names = {name}
    if same is _named:
        return names
    for _ in range(3):
        for node in ast.walk(body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) and same(node.value, names):
                names.add(node.targets[0].id)
    return names


def _receivers(call: ast.Call, names: set[str], same, func, owner: type | None, built=None,
               loops: dict | None = None):
    """``(function, parameter, its class)`` for each parameter of the callee of ``call`` that
    receives one of ``names`` (as ``same`` reads it)."""
    callee, cls, bound = _callee(call.func, func, owner, built, loops)
    if callee is None:
        return
    try:
        params = list(inspect.signature(callee).parameters)
    except (TypeError, ValueError):
        return
    if bound and params:
        params = params[1:]
    for i, arg in enumerate(call.args):
        if same(arg, names) and i < len(params):
            yield callee, params[i], cls
    for keyword in call.keywords:
        if same(keyword.value, names) and keyword.arg in params:
            yield callee, keyword.arg, cls


def _layer_loops(body: ast.AST) -> dict[str, str]:
    """``{layer: attr}`` for each loop over a container of the module's, ``for layer in
    self.layers:`` (or ``enumerate(self.layers)``), or a comprehension's (``[head(x) for head
    in self.heads]``)."""
    found: dict[str, str] = {}
    loops = []
    for node in ast.walk(body):
        if isinstance(node, ast.For):
            loops.append((node.target, node.iter))
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            loops += [(gen.target, gen.iter) for gen in node.generators]
    for target, it in loops:
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" \
                and it.args and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target, it = target.elts[1], it.args[0]
        if isinstance(target, ast.Name) and isinstance(it, ast.Attribute) \
                and isinstance(it.value, ast.Name) and it.value.id == "self":
            found[target.id] = it.attr
    return found


def _callee(node: ast.expr, func, owner: type | None, built=None, loops: dict | None = None):
    """The function a callee expression runs, its class, and whether it takes ``self``."""
    names = getattr(func, "__globals__", {})
    if isinstance(node, ast.Name):
        found = names.get(node.id)
        if inspect.isfunction(found):
            return found, None, False
        if loops and node.id in loops and isinstance(owner, type):  # a layer of a stack
            return _forward_of(element_class(owner, loops[node.id], built))
        return None, None, False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and isinstance(cls := names.get(node.func.id), type) and hasattr(cls, "forward"):
        return _forward_of(cls)  # a module made on the spot and called: ``Attention()(q, k, v)``
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) \
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "super":
        return _base_method(func, owner, node.attr)  # ``super().forward(x, None, mask)``
    if isinstance(node, ast.Attribute) and not isinstance(node.value, ast.Name):
        return _method_of_object(node, names, owner, built)
    if not isinstance(node, ast.Attribute):
        return None, None, False
    base = node.value.id
    cls = owner if base == "self" else names.get(base)
    if not isinstance(cls, type):
        return None, None, False
    found = _method(cls, node.attr, bound=base == "self")
    if found[0] is None and base == "self" and inspect.getattr_static(cls, node.attr, None) is None:
        return _forward_of(submodule_class(cls, node.attr, built))
    return found


def _method(cls: type, attr: str, bound: bool):
    """``(function, cls, whether it takes self)`` for a static method or a function of
    ``cls`` named ``attr`` (``bound``: called on an instance); ``(None, None, False)`` else."""
    static = inspect.getattr_static(cls, attr, None)
    if isinstance(static, staticmethod):
        return static.__func__, cls, False
    if inspect.isfunction(static):
        return static, cls, bound
    return None, None, False


def _forward_of(sub: type | None):
    """The ``forward`` a call of an instance of the module class ``sub`` runs."""
    if sub is not None and inspect.isfunction(getattr(sub, "forward", None)):
        return sub.forward, sub, True
    return None, None, False


def _method_of_object(node: ast.Attribute, names: dict, owner: type | None, built=None):
    """A method called on a submodule (``self.rotary.rotate(q, freqs)``) or on an object made
    on the spot (``Rotary(args).apply(x, freqs)``): that class's function, which takes ``self``."""
    value = node.value
    cls = None
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
            and value.value.id == "self" and isinstance(owner, type):
        cls = submodule_class(owner, value.attr, built)
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        cls = names.get(value.func.id)
    if not isinstance(cls, type):
        return None, None, False
    return _method(cls, node.attr, bound=True)


def _base_method(func, owner: type | None, attr: str):
    """What ``super().attr`` runs inside ``func``, a method of ``owner`` or of one of its bases:
    the method of the first class after the one defining ``func`` in ``owner``'s MRO."""
    mro = owner.__mro__ if isinstance(owner, type) else ()
    defining = next((i for i, k in enumerate(mro) if vars(k).get(func.__name__) is func), None)
    for cls in mro[defining + 1:] if defining is not None else ():
        found = vars(cls).get(attr)
        if inspect.isfunction(found):
            return found, cls, True
    return None, None, False


def submodule_class(cls: type, attr: str, built=None) -> type | None:
    """The module class ``cls``'s constructor puts in ``self.attr``: built there
    (``self.attr = Attention(...)``) or handed in as an argument annotated with it
    (``def __init__(self, attn: Attention)``, ``self.attr = attn``) or that ``built(cls, arg)``
    names; None when the code does not say, or says two things."""
    found = _stored(cls, attr)
    if found is None:
        return None
    init, names, _, values = found
    made = set()
    for value in values:
        if isinstance(value, ast.Constant) and value.value is None and len(values) > 1:
            continue  # ``self.attn = None`` before the code that builds it (a course template)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            one = names.get(value.func.id)
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and isinstance(value.func.value, ast.Name) and value.func.value.id == "self":
            one = _built_by_method(cls, value.func.attr)  # ``self.build_self_attention(...)``
        elif isinstance(value, ast.Name):
            one = _annotated(init, value.id, names)
            if one is None and built is not None:
                one = built(cls, value.id)
        else:
            one = None
        if not _user_module(one):
            return None
        made.add(one)
    return made.pop() if len(made) == 1 else None


def _built_by_method(cls: type, name: str) -> type | None:
    """The module class a builder method of ``cls`` returns (``def build_self_attention(self,
    ...): return MultiheadAttention(...)``; a subclass's override is the one found), when every
    ``return`` of it builds that one class; None otherwise."""
    method = inspect.getattr_static(cls, name, None)
    if isinstance(method, (staticmethod, classmethod)):
        method = method.__func__
    if not inspect.isfunction(method):
        return None
    body = _function_def(_tree(method), method.__name__)
    if body is None:
        return None
    names = getattr(method, "__globals__", {})
    made = set()
    for node in ast.walk(body):
        if not isinstance(node, ast.Return):
            continue
        value = node.value
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return None
        made.add(names.get(value.func.id))
    return made.pop() if len(made) == 1 else None


def _stored(cls: type, attr: str):
    """``(cls's own __init__, its globals, its body, the values it assigns to self.attr)``, or
    None where its source cannot be read."""
    init = _init_of(cls)
    body = _function_def(_tree(init)) if init is not None else None
    if body is None:
        return None
    values = [node.value for node in ast.walk(body)
              if isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Attribute)
              and isinstance(node.targets[0].value, ast.Name)
              and node.targets[0].value.id == "self" and node.targets[0].attr == attr]
    return init, getattr(init, "__globals__", {}), body, values


def _user_module(made) -> bool:
    """Whether ``made`` is a module class of the user's code (not torch's own)."""
    import torch.nn as nn

    return isinstance(made, type) and issubclass(made, nn.Module) \
        and not made.__module__.startswith("torch.")


#: torch's containers of layers, whose elements a loop over them calls
_CONTAINERS = frozenset({"ModuleList", "Sequential"})


def element_class(cls: type, attr: str, built=None) -> type | None:
    """The module class of the layers in the container ``cls``'s constructor puts in
    ``self.attr``: ``nn.ModuleList([Block(...) for _ in range(n)])``, ``nn.Sequential(*[...])``,
    a list of copies of one layer (``[copy.deepcopy(layer) for _ in range(n)]``, ``layer``
    built in the constructor or handed in); None when the code does not say, or says two."""
    found = _stored(cls, attr)
    if found is None:
        return None
    init, names, body, values = found
    locals_made = {node.targets[0].id: node.value for node in ast.walk(body)
                   if isinstance(node, ast.Assign) and len(node.targets) == 1
                   and isinstance(node.targets[0], ast.Name)}

    def made_by(expr, depth=6):
        if depth == 0:
            return None
        if isinstance(expr, ast.Starred):
            return made_by(expr.value, depth)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
            return made_by(expr.elt, depth - 1)
        if isinstance(expr, ast.List) and len(expr.elts) == 1:
            return made_by(expr.elts[0], depth - 1)
        if isinstance(expr, ast.Name):
            if expr.id in locals_made:
                return made_by(locals_made[expr.id], depth - 1)
            return _annotated(init, expr.id, names) or (built(cls, expr.id) if built else None)
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "deepcopy" and len(expr.args) == 1:
            return made_by(expr.args[0], depth - 1)
        return names.get(called) if isinstance(func, ast.Name) else None

    made: set = set()
    for value in values:
        func = value.func if isinstance(value, ast.Call) else None
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called not in _CONTAINERS or not value.args:
            return None
        made |= {made_by(arg) for arg in value.args}
    if len(made) > 1:  # layers the code does not say, beside one it does (a norm after them)
        made.discard(None)
    return made.pop() if len(made) == 1 and _user_module(next(iter(made))) else None


def _annotated(init, param: str, names: dict):
    annotation = getattr(init, "__annotations__", {}).get(param)
    if isinstance(annotation, str):
        annotation = names.get(annotation)
    return annotation
