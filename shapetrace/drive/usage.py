"""What a module's own code says about its constructor's arguments, read before guessing.

- :func:`meaning_by_use`: the dim a size argument stands for, from what the constructor hands it
  to: a layer's ``in_features``/``out_features``/``embedding_dim``/``normalized_shape`` (C), a
  convolution's or a norm's ``in_channels``/``out_channels``/``num_channels``/``num_features``
  (C), a convolution's ``kernel_size`` (:data:`KERNEL`), an embedding's ``num_embeddings`` (V),
  ``num_heads`` (H), ``range()`` (a layer count), an argument of another class of the module
  whose name states a size. Only when every use agrees.
(``kwargs_read.kwargs_base``, where a constructor's ``**kwargs`` go, and
``config_fields.fields_read``, the fields read from a config, are read with these helpers.)

All of it reads source (``ast``); nothing is run. Anything unreadable says nothing.
"""

from __future__ import annotations

import ast
import sys
import inspect

from ..analysis.code import function_def as _function_def
from ..analysis.code import own_init as _init_of
from ..analysis.code import parsed as _tree
from ..base.names import counts_layers, size_of
from .size_terms import (after_heads, assigned_names, divides_width, factor_of, learned_vector, named_product,
                         position_table, product_names, square_table, times_heads)

#: parameters of torch's layers whose value is a size: the dim each one is
_LAYER_SIZES = {"in_features": "C", "out_features": "C", "embedding_dim": "C",
                "normalized_shape": "C", "embed_dim": "C", "d_model": "C", "hidden_size": "C",
                "num_embeddings": "V", "num_heads": "H", "nhead": "H",
                # the widths of nn.MultiheadAttention's keys and values (a context's own width)
                "kdim": "C", "vdim": "C",
                # convolutions' and norms' channels: an image's or a (B, C, T) signal's width
                "in_channels": "C", "out_channels": "C", "num_channels": "C",
                "num_features": "C", "kernel_size": "kernel", "stride": "stride",
                # a count of groups the channels are divided into (a GroupNorm's): 1 divides all
                "num_groups": "divisor"}
#: how deep hand-offs (a config passed to a block, passed to an attention) are followed
_DEPTH = 4
LAYER_COUNT = "layers"
#: a factor of a layer's output size and nothing else (``p * p * out_channels``): any value runs
OUTPUT_FACTOR = "output factor"
#: a convolution's or a pooling's kernel size (made 3)
KERNEL = "kernel"
#: a count other sizes are divided by and nothing else (``n_heads // model_parallel_size``,
#: ``assert hidden % groups == 0``): made 1, the one count that divides the probe sizes
DIVISOR = "divisor"
#: how many of the largest values a ``topk`` keeps (a router's experts per token, the keys a
#: sparse attention keeps): made 2, which every axis it picks from holds
CHOSEN = "chosen"
#: where tensors are made or moved (``.to(device)``, ``device=device``): the CPU
DEVICE = "device"


def _reading_init(cls: type):
    """The constructor that reads ``cls``'s arguments: its own ``__init__``, or, when it has none
    or that only takes ``*args, **kwargs`` to hand them on (a class a decorator wraps, a
    subclass that records its arguments), the first one of its bases of the user's code that
    names them."""
    init = _init_of(cls)
    if init is not None and not _forwards_only(init):
        return init
    for base in cls.__mro__[1:]:  # an inherited constructor, or the one a forwarder hands on to
        if (base.__module__ or "").startswith("torch"):
            return None
        found = _init_of(base)
        if found is not None and not _forwards_only(found):
            return found
    return None


def _forwards_only(init) -> bool:
    try:
        params = list(inspect.signature(init).parameters.values())[1:]
    except (TypeError, ValueError):
        return False
    return bool(params) and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def _resolve(node: ast.expr, names: dict):
    """The object a callee expression names in the module's globals (``nn.Linear``), or None."""
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        import builtins

        return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, names)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def _bound(callee, call: ast.Call, position_of) -> list[tuple[object, str]]:
    """``(callee, parameter name)`` for each argument of ``call`` that ``position_of`` picks:
    ``position_of(arg)`` is true for the value being traced."""
    if not any(position_of(a) for a in call.args if not isinstance(a, ast.Starred)) \
            and not any(kw.arg is not None and position_of(kw.value) for kw in call.keywords):
        return []  # no argument of the call is the value: its signature is not needed
    target = callee.__init__ if isinstance(callee, type) else callee
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return []
    if isinstance(callee, type) and params and params[0].name == "self":
        params = params[1:]
    varargs = _takes_varargs(target)
    out = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if position_of(arg) and i < len(params):
            out.append((callee, params[i].name))
        elif position_of(arg) and varargs:  # handed on in *args: its place there
            out.append((callee, f"*{i - len(params)}"))
    for kw in call.keywords:
        if kw.arg is not None and position_of(kw.value):
            out.append((callee, kw.arg))
    return out


def _takes_varargs(func) -> bool:
    try:
        return any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False


def _from_varargs(body: ast.AST, func, place: int, names: dict) -> list[tuple[object, str]]:
    """``(callee, parameter name)`` for each call in ``body`` that hands ``func``'s ``*args`` on
    (``nn.Conv2d(*args, **kwargs)``): the parameter at ``place`` in those arguments."""
    star = next((p.name for p in inspect.signature(func).parameters.values()
                 if p.kind is p.VAR_POSITIONAL), None)
    out = []
    for node in ast.walk(body):
        if not isinstance(node, ast.Call):
            continue
        at = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)), None)
        if at is None or not (isinstance(node.args[at].value, ast.Name)
                              and node.args[at].value.id == star):
            continue
        callee = _resolve(node.func, names)
        if callee is None or not callable(callee):
            continue
        target = callee.__init__ if isinstance(callee, type) else callee
        try:
            params = [p for p in inspect.signature(target).parameters.values()
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        except (TypeError, ValueError):
            continue
        if isinstance(callee, type) and params and params[0].name == "self":
            params = params[1:]
        if at + place < len(params):
            out.append((callee, params[at + place].name))
    return out


def _user_code(obj) -> bool:
    """A class or function of the user's (not torch's, not the standard library's)."""
    from .absent import NotInstalled

    if isinstance(obj, NotInstalled):
        return False  # a name of a package that is not installed: no code to read
    module = getattr(obj, "__module__", "") or ""
    return not module.startswith(("torch", "builtins", "typing", "collections", "functools")) \
        and module.partition(".")[0] not in sys.stdlib_module_names  # copy.deepcopy(config)


# --- what a size argument is handed to ----------------------------------------------------------

def handed_init(cls: type):
    """The constructor ``cls``'s own hands its ``*args, **kwargs`` on to (``class
    LayerNorm2d(nn.LayerNorm)`` whose ``__init__`` only calls ``super().__init__(*args,
    **kwargs)``): the first in its bases that names its arguments, when it is one of torch's
    layers; None when ``cls``'s own constructor names them (or it has none of its own)."""
    init = _init_of(cls)
    if init is None or not _forwards_only(init):
        return None
    for base in cls.__mro__[1:]:
        found = vars(base).get("__init__")
        if found is not None and base is not object and not (
                inspect.isfunction(found) and _forwards_only(found)):
            # torch's own layer only: a base of the user's is read where it uses what it is
            # handed (``kwargs_base``: ``super().__init__(causal=False, **kwargs)``)
            return found if (base.__module__ or "").startswith("torch.nn") else None
    return None


def without_self(init) -> inspect.Signature:
    """The signature of a constructor without its ``self``."""
    sig = inspect.signature(init)
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def inherited_layer_size(cls: type, param: str) -> str | None:
    """The dim ``param`` is, for a class built by torch's own layer constructor (a weight
    standardised ``nn.Conv3d`` subclass that only writes ``forward``, or one whose constructor
    hands everything on to it): its name in that layer."""
    init = handed_init(cls) or getattr(cls, "__init__", None)
    found = _LAYER_SIZES.get(param) if (getattr(init, "__module__", "") or "").startswith(
        "torch.nn.modules") else None
    return None if found == "stride" else found


def meaning_by_use(cls: type, param: str) -> str | None:
    """The dim ``param`` of ``cls``'s constructor stands for by what the constructor hands it
    to, :data:`LAYER_COUNT` for a ``range()`` count; None unless every use found agrees."""
    uses = _uses(cls, param, _DEPTH, set())
    if len(uses) > 1:  # a factor of an output's size, a divisor: nothing beside another use
        uses -= {OUTPUT_FACTOR, DIVISOR}
    if uses == {"C", "d"}:  # a width handed on as its own head size too (heads=1): C builds both
        uses = {"C"}
    found = next(iter(uses)) if len(uses) == 1 else None
    return None if found in ("stride", "?") else found  # a stride too: a patch size, no free kernel


def _uses(obj, param: str, depth: int, seen: set, owner: type | None = None) -> set[str]:
    """The dims ``param`` of ``obj`` (a class's constructor, or a function) is handed on as;
    ``owner`` is the class whose method ``obj`` is, so that ``self.helper(param)`` and
    ``self.attr`` inside it are followed too."""
    if depth <= 0 or (id(obj), param) in seen:
        return set()
    seen.add((id(obj), param))
    if isinstance(obj, type):
        owner = obj
    func = _reading_init(obj) if isinstance(obj, type) else obj
    if func is None or not inspect.isfunction(func):
        return set()
    body = _function_def(_tree(func), func.__name__)
    if body is None:
        return set()
    names = func.__globals__
    if param.startswith("*"):  # a place in *args, handed on to the layers that take them
        pairs = _from_varargs(body, func, int(param[1:]), names)
        return _sizes_of(pairs, depth, seen) if pairs else set()
    local, attributes = _aliases(body, param)
    attributes |= _stored_by_base(body, owner, param, local)
    is_param = _reads(local, attributes)

    found: set[str] = set()
    loops = _loop_bodies(body)
    products = product_names(body, is_param)  # hidden = channels * expansion

    def factor(arg) -> bool:
        return factor_of(arg, is_param) or named_product(arg, *products)

    for node in ast.walk(body):
        if divides_width(node, is_param):
            found.add("H")  # model_dim // head_count: the width split into heads
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)) \
                and is_param(node.right) and not isinstance(node.left, (ast.Constant, ast.JoinedStr)):
            # n_heads // model_parallel_size: divides a count (not '%s' % it); stored and read in
            # forward as a size (view(B, T, self.groups, -1)) it is an axis: 1 would collapse it
            found.add("?" if owner is not None and _sized_in_forward(owner, attributes) else DIVISOR)
            continue
        if not isinstance(node, ast.Call):
            continue
        if _device_of(node, is_param):
            found.add(DEVICE)  # torch.zeros(n, device=dev), w.to(dev): where tensors live
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "range" and len(node.args) == 1 \
                and is_param(node.args[0]):
            # a count of layers where the loop builds something; a loop that only fills a table
            # (``for i in range(window): table[i][j] = abs(i - j)``) counts positions instead
            inside = loops.get(id(node))
            found.add(LAYER_COUNT if inside is None or _builds(inside, names) else "?")
            continue
        if learned_vector(node, is_param):
            found.add("C")  # nn.Parameter(torch.ones(num_features)): a value per channel
            continue
        if square_table(node, is_param) or position_table(node, is_param):
            found.add("L")  # torch.ones(max_T, max_T): pairs of positions, up to the longest
            continue
        if after_heads(node, is_param):
            found.add("d")  # torch.empty(dim, n_head, 2 * c): a size per head
            continue
        method = _own_method(node.func, owner)
        if method is not None:  # self._build_weights(dim_in, dim_out): read where it is used
            for name in _method_params(method, node, is_param):
                found |= _uses(method, name, depth - 1, seen, owner)
            continue
        callee = _base_of(node.func, owner) or _resolve(node.func, names)
        if callee is None or not callable(callee):
            continue
        found |= _sizes_of(_bound(callee, node, is_param), depth, seen)
        per_head = _sizes_of(_bound(callee, node, lambda arg: times_heads(arg, is_param)), depth, seen)
        if per_head:  # nn.Linear(d_model, n_heads * d_queries): a width per head
            found |= {"d" if dim == "C" else "?" for dim in per_head}
        elif any(name in _OUTPUT_SIZES and not _user_code(target) for target, name in
                 _bound(callee, node, factor)):
            found.add(OUTPUT_FACTOR)  # nn.Linear(C, p * p * out_channels): sizes an output only
    if owner is not None and attributes:
        found |= _forward_uses(owner, attributes)
    return found


def _loop_bodies(body: ast.AST) -> dict[int, list[ast.AST]]:
    """id of the ``iter`` of each ``for`` loop and comprehension in ``body`` -> what runs per
    step (the loop's body, the comprehension's element)."""
    out: dict[int, list[ast.AST]] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.For):
            out[id(node.iter)] = list(node.body)
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            for gen in node.generators:
                out[id(gen.iter)] = [node.elt]
        elif isinstance(node, ast.DictComp):
            for gen in node.generators:
                out[id(gen.iter)] = [node.key, node.value]
    return out


def _builds(nodes: list[ast.AST], names: dict) -> bool:
    """Whether code run per step of a loop may build something: a call of anything but a
    builtin function or one of torch's tensor functions (a module class, a helper, an
    ``append``)."""
    import builtins

    for node in nodes:
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            callee = _resolve(call.func, names)
            if callee is None or isinstance(callee, type):
                return True  # a method, a helper of the user's, a class
            if getattr(builtins, getattr(callee, "__name__", ""), None) is callee:
                continue
            if (getattr(callee, "__module__", "") or "").startswith("torch") \
                    and not isinstance(callee, type):
                continue
            return True
    return False


def _reads(local: set[str], attributes: set[str]):
    """Whether an expression is the parameter: one of its local names ``local``, or
    ``self.<attribute>`` for one of ``attributes`` it was stored in; through a choice of two
    (``in_channels if i == 0 else out_channels``) and a few added (``num_classes + 1``)."""

    def is_param(node) -> bool:
        if isinstance(node, ast.IfExp):  # nn.Conv2d(in_channels if i == 0 else out_channels, ...)
            return is_param(node.body) or is_param(node.orelse)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) \
                and isinstance(node.right, (ast.Constant, ast.Name)):
            # nn.Embedding(num_classes + use_cfg_embedding, ...): a size and a few more
            return is_param(node.left)
        if isinstance(node, ast.Name):
            return node.id in local
        return isinstance(node, ast.Attribute) and node.attr in attributes \
            and isinstance(node.value, ast.Name) and node.value.id == "self"

    return is_param


def _base_of(func: ast.expr, owner: type | None) -> type | None:
    """The base class ``super().__init__`` (or ``super(Owner, self).__init__``) calls in a
    constructor of ``owner``: its arguments are read where the base uses them."""
    if owner is None or not (isinstance(func, ast.Attribute) and func.attr == "__init__"
                             and isinstance(func.value, ast.Call)
                             and isinstance(func.value.func, ast.Name)
                             and func.value.func.id == "super"):
        return None
    bases = owner.__mro__[1:]
    return bases[0] if bases and bases[0] is not object else None


def _stored_by_base(body: ast.AST, owner: type | None, param: str, local: set[str]) -> set[str]:
    """The attributes of ``self`` the base class's constructor stores ``param`` in, when the
    constructor hands it to ``super().__init__`` (``self.nheads`` of the base, read in the
    subclass's own ``self.nheads * self.head_dim``)."""
    found: set[str] = set()
    for node in ast.walk(body):
        base = _base_of(node.func, owner) if isinstance(node, ast.Call) else None
        init = _reading_init(base) if base is not None else None
        if init is None or not inspect.isfunction(init):
            continue
        tree = _function_def(_tree(init), init.__name__)
        for _, name in _bound(base, node, lambda arg: isinstance(arg, ast.Name) and arg.id in local):
            if tree is not None and not name.startswith("*"):
                found |= _aliases(tree, name)[1]
    return found


def _own_method(func: ast.expr, owner: type | None):
    """The plain function ``self.name`` calls when ``owner`` defines it (a helper method of the
    class's own code, not torch's), else None."""
    if owner is None or not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                             and func.value.id == "self"):
        return None
    method = inspect.getattr_static(owner, func.attr, None)
    if not inspect.isfunction(method) or not _user_code(method):
        return None
    return method


def _method_params(method, call: ast.Call, position_of) -> list[str]:
    """The parameters of ``method`` (past ``self``) that the arguments ``position_of`` picks in
    ``call`` are bound to."""
    try:
        params = [p.name for p in inspect.signature(method).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)][1:]
    except (TypeError, ValueError):
        return []
    out = [params[i] for i, arg in enumerate(call.args)
           if i < len(params) and not isinstance(arg, ast.Starred) and position_of(arg)]
    return out + [kw.arg for kw in call.keywords
                  if kw.arg in params and position_of(kw.value)]


def _own_forward(cls: type):
    """``(forward, its parsed body)`` of the forward ``cls`` defines itself, or ``(None, None)``."""
    forward = cls.__dict__.get("forward")
    body = _function_def(_tree(forward), "forward") if inspect.isfunction(forward) else None
    return (forward, body) if body is not None else (None, None)


def slice_step(cls: type, param: str) -> bool:
    """Whether ``cls`` uses its constructor argument ``param`` only as a slice's step in its
    forward (``self.stride = stride``, then ``Q[:, ::self.stride]``): every other position kept,
    any step runs."""
    func = _reading_init(cls)
    body = _function_def(_tree(func), func.__name__) if inspect.isfunction(func) else None
    forward_body = _own_forward(cls)[1]
    if body is None or forward_body is None:
        return False
    local, attributes = _aliases(body, param)
    stored = set()  # the names assigned to self.<attribute> as they are
    for node in ast.walk(body):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr in attributes
                                                for t in node.targets):
            stored.add(id(node.value))
    if any(isinstance(n, ast.Name) and n.id in local and isinstance(n.ctx, ast.Load)
           and id(n) not in stored for n in ast.walk(body)):
        return False  # the constructor reads it for something else too
    is_param = _reads(set(), attributes)
    steps = {id(n.step) for n in ast.walk(forward_body) if isinstance(n, ast.Slice)
             and n.step is not None and is_param(n.step)}
    reads = [n for n in ast.walk(forward_body) if is_param(n)]
    return bool(steps) and all(id(n) in steps for n in reads)


def _sized_in_forward(cls: type, attributes: set[str]) -> bool:
    """Whether forward reads ``self.attr`` (one of ``attributes``) other than in a comparison
    (``if self.model_parallel_size > 1``)."""
    body = _own_forward(cls)[1]
    if body is None or not attributes:
        return False
    compared = {id(n) for c in ast.walk(body) if isinstance(c, ast.Compare)
                for n in ast.walk(c)}
    return any(isinstance(n, ast.Attribute) and n.attr in attributes and id(n) not in compared
               and isinstance(n.value, ast.Name) and n.value.id == "self" for n in ast.walk(body))


def _forward_uses(cls: type, attributes: set[str]) -> set[str]:
    """The dims forward's calls of torch's functions read ``self.attr`` as, for the attributes
    the constructor stored a parameter in: ``F.layer_norm(x, (self.channels,), ...)``, the
    width."""
    forward, body = _own_forward(cls)
    if body is None:
        return set()

    def is_attr(node) -> bool:
        if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == 1:
            node = node.elts[0]
        return isinstance(node, ast.Attribute) and node.attr in attributes \
            and isinstance(node.value, ast.Name) and node.value.id == "self"

    found: set[str] = set()
    for node in ast.walk(body):
        if isinstance(node, ast.Call) and _topk_count(node, is_attr):
            found.add(CHOSEN)
            continue
        if isinstance(node, ast.Call) and _device_of(node, is_attr):
            found.add(DEVICE)
            continue
        if isinstance(node, ast.Call):
            callee = _resolve(node.func, forward.__globals__)
            if callable(callee) and not _user_code(callee):
                found |= {_LAYER_SIZES[name] for _, name in _bound(callee, node, is_attr)
                          if name in _LAYER_SIZES}
    return found


def _device_of(call: ast.Call, is_value) -> bool:
    """Whether ``call`` takes a value ``is_value`` accepts as the device: ``device=value``, or
    the one argument of ``.to(value)`` / ``.cuda(value)``."""
    if any(k.arg == "device" and is_value(k.value) for k in call.keywords):
        return True
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") \
        and len(call.args) == 1 and not call.keywords and is_value(call.args[0])


def _topk_count(call: ast.Call, is_attr) -> bool:
    """Whether ``call`` is a ``topk`` (``x.topk(self.k)``, ``torch.topk(x, self.k)``,
    ``k=self.k``) whose count is one of the attributes ``is_attr`` accepts."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "topk"):
        return False
    place = 1 if isinstance(func.value, ast.Name) and func.value.id == "torch" else 0
    count = call.args[place] if len(call.args) > place else \
        next((k.value for k in call.keywords if k.arg == "k"), None)
    return count is not None and is_attr(count)


#: the parameters of torch's layers that size only what they return
_OUTPUT_SIZES = frozenset({"out_features", "out_channels"})


def _sizes_of(pairs: list, depth: int, seen: set) -> set[str]:
    """The dims the parameters ``pairs`` (``(callee, parameter name)``) stand for: a torch
    layer's by its parameter's name, a user function's or class's by its own use of it."""
    found: set[str] = set()
    for target, name in pairs:
        if name.startswith("*"):  # a place in *args: followed to the layer it is handed on to
            if _user_code(target):
                found |= _uses(target, name, depth - 1, seen)
            continue
        dim = _LAYER_SIZES.get(name) if not _user_code(target) or _is_torch_layer(target) \
            else None
        if dim is None and not _user_code(target) and counts_layers(name):
            dim = LAYER_COUNT  # nn.TransformerEncoder(layer, num_layers)
        if dim is None and _user_code(target) and _fields_of(target, name):
            continue  # DenseBlock(h) reading h.dense_channel: an object, not the size h names
        if dim is None and _user_code(target):
            dim = size_of(name, constructor=True)
            if dim is None and counts_layers(name):
                dim = LAYER_COUNT
            if dim is None:
                found |= _uses(target, name, depth - 1, seen)
                continue
        if dim is not None:
            found.add(dim)
    return found


def _fields_of(target, name: str) -> bool:
    """Whether the constructor (or function) ``target`` reads an attribute of its parameter
    ``name`` (``h.dense_channel``), not only calls a method of it."""
    func = _reading_init(target) if isinstance(target, type) else target
    body = _function_def(_tree(func), func.__name__) if inspect.isfunction(func) else None
    if body is None:
        return False
    called = {id(n.func) for n in ast.walk(body) if isinstance(n, ast.Call)}
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
               and id(n) not in called and not n.attr.startswith("_") for n in ast.walk(body))


def _aliases(body: ast.AST, param: str) -> tuple[set[str], set[str]]:
    """``(local names, attributes of self)`` assigned ``param`` as it is (``self.channels =
    channels``): uses of those are uses of it."""
    local, attributes = assigned_names(body, lambda value: isinstance(value, ast.Name)
                                       and value.id == param)
    return local | {param}, attributes


def _is_torch_layer(obj) -> bool:
    """A subclass of one of torch's layers (``class Linear(nn.Linear)``)."""
    return isinstance(obj, type) and any(
        (getattr(base, "__module__", "") or "").startswith("torch.nn") for base in obj.__mro__[1:]
        if base.__name__ != "Module")
