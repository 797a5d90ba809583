"""A module argument built the way the project's own code builds it.

A constructor argument that is a module (``AttentionLayer(attention, d_model, n_heads)``,
``MaskDecoder(transformer=...)``, ``Encoder([EncoderLayer(...) for _ in range(n)])``) takes
whatever the code that builds the class hands it. :func:`built_for` reads (``ast``; nothing is
run) every call of the class in its own file and the files of its package, and returns the
module class handed as that argument there: a call of the class in place (``Attn(...)``), a
name the calling function assigned from one (``layer = Block(...)``), or a list of them (a list
comprehension or literal of such calls). The class must be a module class of the project's code
that the code names, or one of torch's own layers; where the calls hand different classes, the
one handed most often stands (the first found among as many). None
when nothing says. A notebook beside the file that calls the class (a course's chapter building
the model its module collects) is read too, its code cells as one module, after the files.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..base.source import class_namespace
from .calling_files import defines_another, imported, text_of, trees
from .cli_defaults import default_for

@dataclass(frozen=True)
class Built:
    """A module argument as the code builds it: ``cls``, one or ``count`` of them in a list,
    read at ``where`` (``file:line``)."""

    cls: type
    count: int | None
    where: str
    #: the keyword arguments the call writes out for one of torch's own layers
    #: (``nn.Transformer(..., batch_first=True)``): its layout is the project's, not a default
    given: dict = field(default_factory=dict)


def built_for(owner: type, param: str) -> Built | None:
    """How the project's code builds the argument ``param`` of ``owner``, or None."""
    place = _parameter_place(owner, param)
    if place is None:
        return None
    index, path = place
    found: list[Built] = []
    for file, tree in trees(path, owner):
        # a notebook with its own version of the class (other code, one name): its calls say
        # which classes and sizes, not the layout of torch's layers its version is written for
        own = file.suffix != ".ipynb" or not defines_another(tree, owner)
        for scope in ast.walk(tree):
            if not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            assigned = _assigned(scope)
            for node in ast.walk(scope):
                if not (isinstance(node, ast.Call) and _named(node.func) == owner.__name__):
                    continue
                arg = _argument(node, param, index)
                one = _module_of(arg, assigned, owner, file) if arg is not None else None
                if one is not None:
                    found.append(Built(one[0], one[1], _where(file, node.lineno),
                                       _torch_keywords(arg, assigned, one[0]) if own else {}))
    if not found:
        return None
    # the class the project builds it with most often (``AttentionLayer(FullAttention(...))`` in
    # most models, a GPU kernel's in one); the first found among as many
    counts = Counter(b.cls for b in found)
    return next(b for b in found if counts[b.cls] == max(counts.values()))


@dataclass(frozen=True)
class Passed:
    """A plain argument as the code passes it: ``value``, read at ``where`` (``file:line``)."""

    value: object
    where: str
    #: the other arguments that call passes by keyword as literals (``along_dim=-2``): passed
    #: together with this one, they are taken with it over the constructor's defaults
    beside: dict = field(default_factory=dict)  # the call's other keywords written out (None too)


def passed_for(owner: type, param: str, depth: int = 3) -> Passed | None:
    """The value the project's code passes as the argument ``param`` of ``owner`` where nothing
    else says: a literal (``LayerNorm(dim, 'WithBias')``), or a parameter of the calling
    function handed on whole whose default is one (``def __init__(self, ..., LayerNorm_type=
    'WithBias'): ... TransformerBlock(..., LayerNorm_type=LayerNorm_type)``). The first call
    found that says stands; None when none does. A parameter handed on with no default of its
    own (``LayerNorm(dim, LayerNorm_type)`` in ``TransformerBlock.__init__``) is followed to the
    calls of the class whose constructor hands it on, ``depth`` levels up."""
    place = _parameter_place(owner, param) if depth > 0 else None
    if place is None:
        return None
    index, path = place
    for file, tree in trees(path, owner):
        methods = {id(f): c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        top = _top_assigned(tree)  # ``config = {...}`` at a script's top, passed from its main()
        for scope in ast.walk(tree):  # a notebook's own cells call it at their top level
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    or scope is tree and _cells(file):
                found = _passed_in(scope, methods.get(id(scope)), owner, param, index, file, depth,
                                   top)
                if found is not None:
                    return found
    return None


def named_by_callers(owner: type, param: str) -> tuple[str, str] | None:
    """``(dim, where)`` for the argument ``param`` of ``owner`` that the project's code passes
    as a value whose name states a size (``FourierBlock(in_channels=configs.d_model, ...)``,
    ``Block(cfg["n_head"])``, ``Layer(d_model)``): the dim that name says, when every call
    whose value has such a name says the same one; None otherwise."""
    from ..base.names import size_of
    from .usage import _fields_of

    place = _parameter_place(owner, param)
    if place is None or _fields_of(owner, param):  # ``h.dense_channel``: no size, whatever
        return None                                # the name passed says
    index, path = place
    found: dict[str, str] = {}
    for file, tree in trees(path, owner):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _named(node.func) == owner.__name__):
                continue
            arg = _argument(node, param, index)
            word = arg.attr if isinstance(arg, ast.Attribute) else arg.id \
                if isinstance(arg, ast.Name) else arg.slice.value \
                if isinstance(arg, ast.Subscript) and isinstance(arg.slice, ast.Constant) \
                and isinstance(arg.slice.value, str) else None
            dim = size_of(word, constructor=True) if word else None
            if dim is not None:
                found.setdefault(dim, _where(file, node.lineno))
    return next(iter(found.items())) if len(found) == 1 else None


def splatted_for(owner: type, param: str) -> type | None:
    """The module class of the project that ``owner``'s constructor builds from the argument
    ``param`` spread as keyword arguments (``self.decoder = Decoder(**decoder_config)``): the
    argument is that class's constructor arguments, a dict. None when nothing does so."""
    from ..analysis.code import definition, own_init

    init = own_init(owner)
    body = definition(init) if init is not None else None
    path = Path(inspect.getsourcefile(owner) or "") if body is not None else None
    for node in ast.walk(body) if body is not None else ():
        if isinstance(node, ast.Call) and any(
                k.arg is None and isinstance(k.value, ast.Name) and k.value.id == param
                for k in node.keywords):
            found = _module_class(_named(node.func), owner, path)
            if found is not None:
                return found
    return None


def _parameter_place(owner: type, param: str) -> tuple[int, Path] | None:
    """``(index among the constructor's arguments, the class's file)`` of ``param``; None when
    the constructor does not take it or the class has no file."""
    try:
        params = [p for p in inspect.signature(owner.__init__).parameters if p != "self"]
        path = Path(inspect.getsourcefile(owner) or "")
    except (TypeError, ValueError, OSError):
        return None
    if param not in params or not path.is_file():
        return None
    return params.index(param), path


def _passed_in(scope, cls_node, owner: type, param: str, index: int, file: Path,
               depth: int, top: dict | None = None) -> Passed | None:
    function = not isinstance(scope, ast.Module)
    defaults = _defaults(scope) if function else {}
    names = [a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs] \
        if function else []
    shadowed: dict[int, set[str]] = {}  # id(node) -> the names a function defined inside binds
    for inner in ast.walk(scope):
        if inner is not scope and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.Lambda)):
            own = {a.arg for a in inner.args.posonlyargs + inner.args.args + inner.args.kwonlyargs}
            for n in ast.walk(inner):
                shadowed.setdefault(id(n), set()).update(own)
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Call) and _named(node.func) == owner.__name__):
            continue
        arg = _argument(node, param, index)
        if isinstance(arg, ast.Name) and arg.id in shadowed.get(id(node), ()):
            continue  # a parameter of a helper defined inside (``def get_block(c_hidden)``)
        if arg is None:  # ``ConvLayer(**kwargs)`` with ``kwargs = dict(activation=..., ...)`` before
            arg = _spread_argument(node, param, scope)
        staged = _stage_of(arg)  # ``downscaling_factor=downscaling_factors[0]``: one stage's
        if staged is not None:
            name, at = staged
            if isinstance(name, ast.Name) and name.id in shadowed.get(id(node), ()):
                continue
            whole = _literal(defaults.get(name.id)) if name.id in defaults else _NOTHING
            where = _where(file, node.lineno)
            if whole is _NOTHING and name.id in names and function and scope.name == "__init__" \
                    and cls_node is not None:  # handed on whole: who passes the stages
                caller = _module_class(cls_node.name, owner, file)
                up = passed_for(caller, name.id, depth - 1) if caller is not None else None
                whole, where = (up.value, up.where) if up is not None else (_NOTHING, where)
            if isinstance(whole, (tuple, list)) and -len(whole) <= at < len(whole):
                return Passed(whole[at], where, {})
            continue
        if isinstance(arg, ast.Name) and arg.id in defaults:
            arg = defaults[arg.id]
        elif isinstance(arg, ast.Name) and arg.id in names and function and scope.name == "__init__" \
                and cls_node is not None:
            caller = _module_class(cls_node.name, owner, file)  # handed on: who passes it
            up = passed_for(caller, arg.id, depth - 1) if caller is not None else None
            if up is not None:
                return up
            continue
        value = _literal(arg)
        if value is _NOTHING and _option_read(arg):  # ``forward_mul=self.args.forward_mul``
            value = _literal(default_for(file, arg.attr))
        set_to = arg
        if isinstance(arg, ast.Name):  # set in the scope, else at the file's top (unless a
            outer = (top or {}) if arg.id not in names else {}  # parameter hides it)
            set_to = _assigned(scope).get(arg.id, outer.get(arg.id, arg))
        if value is _NOTHING and set_to is not arg:  # a name the scope set to a literal
            value = _literal(set_to)
        if value is _NOTHING:  # a layer class handed in (``act_layer=nn.GELU``, or a name set to one)
            value = _module_class_named(set_to, owner)
        if value is not _NOTHING:
            beside = {k.arg: None if _is_none(k.value) else _literal(k.value)
                      for k in node.keywords if k.arg not in (None, param)}
            return Passed(value, _where(file, node.lineno),
                          {k: v for k, v in beside.items() if v is not _NOTHING})
    return None


_NOTHING = object()


def _stage_of(node: ast.expr | None) -> tuple[ast.Name, int] | None:
    """``(name, i)`` for ``name[i]`` with ``i`` a whole number written out (one stage's entry
    of a list per stage); None for anything else."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) \
                and isinstance(index.operand, ast.Constant):
            index = ast.Constant(-index.operand.value)
        if isinstance(index, ast.Constant) and type(index.value) is int:
            return node.value, index.value
    return None


def _option_read(node: ast.expr | None) -> bool:
    """Whether ``node`` reads an attribute of parsed options: ``args.dim``, ``self.opt.dim``
    (not ``self.dim``, the calling module's own)."""
    if not isinstance(node, ast.Attribute):
        return False
    root, depth = node.value, 1
    while isinstance(root, ast.Attribute):
        root, depth = root.value, depth + 1
    return isinstance(root, ast.Name) and (root.id != "self" or depth > 1)


def _where(file: Path, line: int) -> str:
    """``file:line``, or a notebook's code cell (``course.ipynb, code cell 12``)."""
    if file.suffix != ".ipynb":
        return f"{file.name}:{line}"
    from .snippets import notebook_cell

    return f"{file.name}, code cell {notebook_cell(text_of(file), line)}"


def _defaults(function: ast.FunctionDef) -> dict[str, ast.expr]:
    """A function's parameters that have defaults, by their default's expression."""
    args = function.args
    positional = args.posonlyargs + args.args
    out = {a.arg: d for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)}
    out.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return out


def _is_none(node: ast.expr) -> bool:
    """Whether ``node`` is ``None`` written out (a keyword set to None: a path chosen)."""
    return isinstance(node, ast.Constant) and node.value is None


def _literal(node: ast.expr | None) -> object:
    """A number, string or bool written out (or a tuple or list of them, or a dict of them by
    name: a config written as a literal), arithmetic on numbers worked out (``4 * 48``);
    :data:`_NOTHING` for anything else, None included (None stands for "not given")."""
    if node is None:
        return _NOTHING
    if isinstance(node, ast.Dict):
        if not node.keys or not all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                    for k in node.keys):
            return _NOTHING
        fields = {k.value: None if _is_none(v) else _literal(v) for k, v in zip(node.keys, node.values)}
        return _NOTHING if any(v is _NOTHING for v in fields.values()) else fields
    value = _folded(node)
    plain = (int, float, str, bool)
    if isinstance(value, plain) or (isinstance(value, (tuple, list)) and value
                                    and all(isinstance(v, plain) for v in value)):
        return value
    return _NOTHING


#: the arithmetic :func:`_folded` works out
_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
               ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b if abs(b) <= 64 else None}


def _folded(node: ast.expr) -> object:
    """``ast.literal_eval`` of ``node``, with arithmetic between numbers written out worked out;
    :data:`_NOTHING` where it cannot be."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _folded(node.left), _folded(node.right)
        if type(left) in (int, float) and type(right) in (int, float):
            try:
                out = _ARITHMETIC[type(node.op)](left, right)
            except (ZeroDivisionError, OverflowError):
                return _NOTHING
            return _NOTHING if out is None else out
        return _NOTHING
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_folded(e) for e in node.elts]
        if any(i is _NOTHING for i in items):
            return _NOTHING
        return items if isinstance(node, ast.List) else tuple(items)
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return _NOTHING


def _cells(file: Path) -> bool:
    """Whether ``file`` holds a notebook's code cells (a notebook, or the module written from
    one), whose top level is where the notebook builds its classes."""
    from .snippets import FROM_NOTEBOOK

    return file.suffix == ".ipynb" or text_of(file).startswith(FROM_NOTEBOOK)


def _spread_argument(call: ast.Call, param: str, scope) -> ast.expr | None:
    """What a call hands ``param`` through a dict it spreads (``**kwargs``), where the scope
    builds that dict as a literal (``{"dim": ...}``) or with ``dict(dim=...)``; None otherwise."""
    built = _assigned(scope)
    for keyword in call.keywords:
        value = built.get(keyword.value.id) if keyword.arg is None and isinstance(keyword.value, ast.Name) \
            else None
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                if isinstance(key, ast.Constant) and key.value == param:
                    return item
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
            for item in value.keywords:
                if item.arg == param:
                    return item.value
    return None


def _module_class_named(node: ast.expr | None, owner: type) -> object:
    """The ``nn.Module`` class a dotted name (``nn.GELU``) names in ``owner``'s module, else
    :data:`_NOTHING`: a layer class handed to a constructor that builds it."""
    import torch

    chain = node
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    found = _resolved(class_namespace(owner), ast.unparse(node)) if isinstance(chain, ast.Name) \
        else None
    return found if isinstance(found, type) and issubclass(found, torch.nn.Module) else _NOTHING


def _resolved(namespace: dict, dotted: str):
    """What a dotted name (``nn.GELU``) names in a module's namespace, or None."""
    head, *rest = dotted.split(".")
    found = namespace.get(head)
    for part in rest:
        found = getattr(found, part, None)
    return found


def _torch_keywords(node: ast.expr, assigned: dict, cls: type) -> dict:
    """The switches and names written out in the call that built ``cls`` (``batch_first=True``,
    ``activation="gelu"``, ``DSProbAttention(False, factor)``'s ``mask_flag=False``): the path
    the project builds it on; sizes are left to the probe sizes (a literal width of the
    project's would not meet them) and rates to shapetrace's (dropout 0). Switches written in
    place are read for torch's own layers by keyword, and for the project's classes also by
    position."""
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    if not isinstance(node, ast.Call):
        return {}
    out = {}
    for keyword in node.keywords:
        value = _literal(keyword.value) if keyword.arg else _NOTHING
        if value is not _NOTHING and isinstance(value, (bool, str)):
            out[keyword.arg] = value
    if (cls.__module__ or "").startswith("torch"):
        return out
    try:
        names = [p.name for p in inspect.signature(cls).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return out
    for name, arg in zip(names, node.args):
        if isinstance(arg, ast.Starred):
            break
        value = _literal(arg)
        if type(value) is bool:
            out.setdefault(name, value)
    return out


def _dotted(func: ast.expr) -> str | None:
    """``nn.LayerNorm`` for a callee written so, ``Block`` for a bare name; None otherwise."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        inner = _dotted(func.value)
        return f"{inner}.{func.attr}" if inner else func.attr
    return None


def _named(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _argument(call: ast.Call, param: str, index: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return call.args[index]
    return None


def _top_assigned(tree: ast.Module) -> dict[str, ast.expr]:
    """The names a file's top level assigns, by the value assigned (the last such assignment):
    the values its functions read as globals."""
    return {node.targets[0].id: node.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)}


def _assigned(scope: ast.AST) -> dict[str, ast.expr]:
    """The names a scope assigns once, by the value assigned (the last such assignment)."""
    out: dict[str, ast.expr] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _module_of(node: ast.expr, assigned: dict, owner: type, file: Path):
    """``(class, None)`` for a call of a module class, ``(class, count)`` for a list of them;
    None otherwise."""
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    if isinstance(node, ast.Call) and _named(node.func) in ("ModuleList", "Sequential") \
            and len(node.args) == 1:
        node = node.args[0]
        if isinstance(node, ast.Name) and node.id in assigned:
            node = assigned[node.id]
    if isinstance(node, ast.ListComp) and isinstance(node.elt, ast.Call):
        cls = _module_class(_dotted(node.elt.func), owner, file)
        return (cls, 2) if cls is not None else None
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts \
            and all(isinstance(e, ast.Call) for e in node.elts):
        classes = {_module_class(_dotted(e.func), owner, file) for e in node.elts}
        cls = classes.pop() if len(classes) == 1 else None
        return (cls, len(node.elts)) if cls is not None else None
    if isinstance(node, ast.Call):
        cls = _module_class(_dotted(node.func), owner, file)
        return (cls, None) if cls is not None else None
    return None


def _module_class(name: str | None, owner: type, file: Path) -> type | None:
    """The module class of the project's code called ``name``, seen from ``owner``'s module or
    from the module of ``file`` (the calling code, imported as its package imports it), or one
    of torch's own layers a dotted name names there (``nn.LayerNorm``, not a container); None
    for anything else."""
    import torch.nn as nn

    if not name:
        return None
    modules = [m for m in (sys.modules.get(owner.__module__), imported(file, owner)) if m is not None]
    leaf = name.rpartition(".")[2]
    for module in modules:
        found = getattr(module, leaf, None)
        if isinstance(found, type) and issubclass(found, nn.Module) and found is not owner \
                and not found.__module__.startswith("torch"):
            return found
    for module in modules if "." in name else ():  # ``norm=nn.LayerNorm(d_model)``
        found = _resolved(vars(module), name)  # one of torch's own layers, not a container
        if isinstance(found, type) and issubclass(found, nn.Module) \
                and found.__module__.startswith("torch.nn") \
                and found not in (nn.ModuleList, nn.ModuleDict, nn.Sequential, nn.Module):
            return found
    return None
