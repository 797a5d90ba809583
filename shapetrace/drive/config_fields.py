"""The fields a module's code reads from a config argument that names no class.

:func:`fields_read`: ``cfg.n_embd``, ``cfg["emb_dim"]``, ``cfg.get("k", 0)``, ``getattr(cfg,
"k")``, in the class (``self.config.block_size`` in any method too) and in every class or
function of its module the config is handed on to (``Block(config)``), each with whether the
code compares it with None. All of it reads source (``ast``); nothing is run.
"""

from __future__ import annotations

import ast
import inspect
from types import SimpleNamespace
from collections.abc import Mapping
from dataclasses import dataclass, field, is_dataclass

from ..base.names import FFN, UNSET_SIDES, number_of, size_of
from .usage import (DIVISOR, LAYER_COUNT, OUTPUT_FACTOR, _DEPTH, _aliases, _bound, _fields_of, _function_def,
                    _init_of, _resolve, _sizes_of, _tree, _user_code)


@dataclass
class Field:
    """One field of a config argument, as the code reads it."""

    name: str
    by_key: bool = False          # cfg["name"] rather than cfg.name
    compared_with_none: bool = False
    #: the constants the code compares it with (``cfg.model_type == "RWKV"``), in order
    compared_to: list = field(default_factory=list)
    default: object = None
    has_default: bool = False
    uses: set = field(default_factory=set)  # the dims the code hands it to as
    equal_to: list = field(default_factory=list)  # fields the code asserts it equals
    #: the defaults of the parameters the code hands it to (``EncoderLayer(...,
    #: activation=cfg.activation)``: "relu"), None's left out; one value when they agree
    handed_defaults: list = field(default_factory=list)
    #: the fields read from this one in turn (``cfg.transformer["num_heads"]``): a nested config
    children: dict = field(default_factory=dict)
    #: the code takes its length, iterates it or asks what it holds (``len(cfg.iter_loss)``,
    #: ``for n in cfg.stages``, ``i in self.iter_loss``): a sequence
    sequence: bool = False
    #: the code adds, subtracts, multiplies or floor-divides it with another number
    #: (``cfg.observation_dim + cfg.action_dim + 2``, ``h.n_fft // 2 + 1``): a count
    counted: bool = False
    #: what the name the constructor binds it to says it is, beyond a size: a feed-forward
    #: width (``d_inner = cfg["model"]["filter_size"]``: "ffn"), a kernel's or a patch's side
    said: object = None



#: :attr:`Field.said` of a feed-forward width: four times the model's
_FFN = "ffn"


# --- the fields read ------------------------------------------------------------------------------

def fields_read(cls: type, param: str) -> dict[str, Field]:
    """The fields the code of ``cls`` reads from its constructor argument ``param`` (see the
    module's docstring); empty when the source cannot be read."""
    fields: dict[str, Field] = {}
    _fields_in(cls, param, fields, _HANDED_DEPTH, set())
    for name in fields.pop(_OPTIONAL, None) or ():  # hasattr(config, "n_unmasked"): left out,
        fields.pop(name, None)                        # as a config without it reads
    for name in [n for n in fields if n.startswith("__") and n.endswith("__")]:
        del fields[name]  # Python's own protocol (__deepcopy__, __reduce__): no field of a config
    return fields


#: how many constructors and functions deep a config handed on is read (a model, its layer, the
#: layer's attention, the function that picks the attention's kind, the kind's own class)
_HANDED_DEPTH = 6


#: the key under which ``_fields_in`` gathers the fields the code asks ``hasattr`` of
_OPTIONAL = " optional"


def _fields_in(obj, param: str, fields: dict[str, Field], depth: int, seen: set) -> None:
    if depth <= 0 or (id(obj), param) in seen:
        return
    seen.add((id(obj), param))
    if isinstance(obj, type):
        init = _init_of(obj)
        if init is None:
            for base in obj.__mro__[1:]:
                if _init_of(base) is not None and _user_code(base):
                    _fields_in(base, param, fields, depth, seen)
                    return
            return
        func, trees = init, [_tree(c) for c in obj.__mro__ if _user_code(c) and c is not object]
    else:
        func, trees = obj, []
    names = getattr(func, "__globals__", {}) or {}
    body = _function_def(_tree(func), func.__name__)
    if body is None:
        return
    aliases, on_self = {param}, set()
    for node in ast.walk(body):  # self.config = config
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    on_self.add(target.attr)

    def is_config(node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in aliases
        return (isinstance(node, ast.Attribute) and node.attr in on_self
                and isinstance(node.value, ast.Name) and node.value.id == "self")

    # a part of the config given a name of its own: ``enc = config.encoder_config``, whose
    # ``enc.hidden_size`` is the config's ``encoder_config.hidden_size``
    parts: dict[str, list] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id not in aliases \
                and (path := _field_path(node.value, is_config)):
            parts[node.targets[0].id] = path

    _named_fields(body, trees, is_config, fields)
    _branched_on_self(body, trees, is_config, names, fields)
    for node in ast.walk(body):  # ACT2FN[config.hidden_act]: a key of the code's own table
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and (name := _field_name(node.slice, is_config)) is not None \
                and isinstance(table := names.get(node.value.id), dict) and table \
                and all(isinstance(key, str) for key in table):
            fields.setdefault(name, Field(name, by_key=isinstance(node.slice, (ast.Subscript, ast.Call))))
            _add_strings(fields, name, [next(iter(table))])
    for tree in [body] + [t for t in trees if t is not None and on_self]:
        for node in ast.walk(tree):  # a field the code asks hasattr() of is optional
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "hasattr" and len(node.args) == 2 and is_config(node.args[0]) \
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                fields.setdefault(_OPTIONAL, set()).add(node.args[1].value)
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if id(node) not in called:  # cfg.merge_from_dict(...) is a method, not a field
                _read_field(node, is_config, fields, parts)
    for node in ast.walk(body):  # handed on: Block(config), make_layers(cfg)
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "range" and len(node.args) == 1 \
                and (name := _field_name(node.args[0], is_config)) is not None:
            fields.setdefault(name, Field(name)).uses.add(LAYER_COUNT)  # range(cfg.e_layers)
            continue
        callee = _resolve(node.func, names)
        if callee is None:
            callee = _parent_init(node, obj)
        if callee is None or not callable(callee):
            continue
        if _user_code(callee):
            for target, name in _bound(callee, node, is_config):
                _fields_in(target, name, fields, depth - 1, seen)
            for part, path in parts.items():  # SelfAttention(enc_config): read under its path
                for target, name in _bound(callee, node, lambda n, p=part: isinstance(n, ast.Name) and n.id == p):
                    level = fields
                    for step, by_key in path:
                        level = level.setdefault(step, Field(step, by_key=by_key)).children
                    _fields_in(target, name, level, depth - 1, seen)
        _handed(callee, node, is_config, fields)


def _parent_init(node: ast.Call, obj) -> type | None:
    """The user's class whose constructor ``super().__init__(config)`` in ``obj``'s runs: the
    fields it reads are read of the same config."""
    func = node.func
    if not (isinstance(obj, type) and isinstance(func, ast.Attribute) and func.attr == "__init__"
            and isinstance(func.value, ast.Call) and getattr(func.value.func, "id", None) == "super"):
        return None
    return next((base for base in obj.__mro__[1:]
                 if _init_of(base) is not None and _user_code(base)), None)


def _named_fields(body, trees: list, is_config, fields: dict[str, Field]) -> None:
    """A field the constructor binds to a name of its own says what it is by that name and by
    what the class does with the name: ``d_model = hp.d_model_e`` is a width (C), and
    ``self.N = hp.N_e`` read by ``range(self.N)`` (in any method) is a count of layers."""
    named: dict[str, list] = {}  # the name (a local, or self's attribute) -> the field's path
    for node in ast.walk(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and (path := _field_path(node.value, is_config)):  # cfg["model"]["d_model"] too
            target = node.targets[0]
            if isinstance(target, ast.Name):
                named[target.id] = path
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "self":
                named["self." + target.attr] = path
    if not named:
        return
    for name, path in named.items():
        word = name.removeprefix("self.")
        dim = size_of(word, constructor=True)
        if dim is not None:
            _nested_field(fields, path).uses.add(dim)
        elif word in FFN:
            _nested_field(fields, path).said = _FFN
        elif word in UNSET_SIDES:
            _nested_field(fields, path).said = UNSET_SIDES[word][0]
    for tree in [body, *(t for t in trees if t is not None)]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "range" and len(node.args) == 1:
                arg = node.args[0]
                key = arg.id if isinstance(arg, ast.Name) else \
                    "self." + arg.attr if isinstance(arg, ast.Attribute) \
                    and isinstance(arg.value, ast.Name) and arg.value.id == "self" else None
                if key in named:
                    _nested_field(fields, named[key]).uses.add(LAYER_COUNT)


def _nested_field(fields: dict[str, Field], path: list) -> Field:
    """The field at ``path`` (``[(name, by key), ...]``, outermost first), made where missing."""
    found = None
    for name, by_key in path:
        found = fields.setdefault(name, Field(name, by_key=by_key))
        fields = found.children
    return found


def read_as_object(cls: type, param) -> bool:
    """Whether the code reads attributes of ``param`` (``h.dense_channel``), a parameter without
    a default the class never calls: an object with fields whatever its name says (``h`` is
    not a head count there)."""
    return param.default is param.empty and _fields_of(cls, param.name) \
        and not called(cls, param.name)


def called(cls: type, param: str) -> bool:
    """Whether ``cls`` calls its constructor argument ``param``, directly or kept as an
    attribute (``self.transf = transformer`` then ``self.transf(src, tgt)``): a module or a
    function, never a config."""
    tree = _tree(cls)
    init = _init_of(cls)
    body = _function_def(_tree(init), "__init__") if init is not None else None
    if tree is None or body is None:
        return False
    local, kept = _aliases(body, param)
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Name) and func.id in local \
                or isinstance(func, ast.Attribute) and func.attr in kept \
                and isinstance(func.value, ast.Name) and func.value.id == "self":
            return True
    return False


def _field_name(node, is_config) -> str | None:
    """The name of the field ``node`` reads from the config (``cfg.n_embd``, ``cfg["n_embd"]``,
    ``cfg.get("n_embd")``), or None."""
    if isinstance(node, ast.Attribute) and is_config(node.value) and not node.attr.startswith("_"):
        return node.attr
    if isinstance(node, ast.Subscript) and is_config(node.value) \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and is_config(node.func.value) and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _handed(callee, call: ast.Call, is_config, fields: dict[str, Field]) -> None:
    """The fields ``call`` hands to ``callee`` as they are (``nn.Linear(cfg.d_model,
    cfg.pred_len)``, ``FullAttention(False, cfg.factor)``): the dims the parameters they land
    in stand for (a torch layer's by its parameter's name, the user's by its own use), and the
    defaults those parameters have, for a field no name explains."""
    for arg in [*call.args, *(kw.value for kw in call.keywords if kw.arg is not None)]:
        name = _field_name(arg, is_config)
        if name is None:
            continue
        pairs = _bound(callee, call, lambda node: node is arg)
        found = fields.setdefault(name, Field(name))
        found.uses |= _sizes_of(pairs, _DEPTH, set())
        for target, param in pairs:
            _add_strings(fields, name, _strings_compared(target, param))
            default = _default_of(target, param)
            if default is not None and default not in found.handed_defaults:
                found.handed_defaults.append(default)


def _branched_on_self(body, trees: list, is_config, names: Mapping, fields: dict[str, Field]) -> None:
    """A field kept on the module (``self.attn_type = config["attn_type"]``) that the class's
    code compares with strings (``self.attn_type == "softmax"``,
    ``self.attn_type.startswith("reformer")``) or hands to a function that does
    (``attn_selector(self.attn_type, config)``): those strings, as for the field itself."""
    kept: dict[str, str] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Attribute) \
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self" \
                and (name := _field_name(node.value, is_config)) is not None:
            kept[node.targets[0].attr] = name
            fields.setdefault(name, Field(name, by_key=not isinstance(node.value, ast.Attribute)))
    if not kept:
        return

    def field_of(node) -> str | None:
        return kept.get(node.attr) if isinstance(node, ast.Attribute) \
            and isinstance(node.value, ast.Name) and node.value.id == "self" else None

    for tree in [body, *(t for t in trees if t is not None)]:
        for node in ast.walk(tree):
            tested = _strings_tested(node, field_of)
            if tested is not None:
                _add_strings(fields, *tested)
            elif isinstance(node, ast.Call) and (callee := _resolve(node.func, names)) is not None:
                for arg in node.args:
                    if (name := field_of(arg)):
                        for target, param in _bound(callee, node, lambda n, a=arg: n is a):
                            _add_strings(fields, name, _strings_compared(target, param))


def _strings_tested(node, subject) -> tuple[str, list[str]] | None:
    """``(name, strings)`` when ``node`` tests what ``subject(expr)`` names (not None) against
    string constants: ``x == "a"``, ``x in ("a", "b")``, ``x.startswith("a")``; None otherwise."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 \
            and isinstance(node.ops[0], (ast.Eq, ast.In)) and (name := subject(node.left)):
        right = node.comparators[0]
        values = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("startswith", "endswith") and (name := subject(node.func.value)):
        values = node.args[:1]
    else:
        return None
    return name, [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]


def _add_strings(fields: dict[str, Field], name: str, strings: list[str]) -> None:
    found = fields.get(name)
    if found is None:
        return
    for text in strings:
        if text not in found.compared_to:
            found.compared_to.append(text)


def _strings_compared(callee, param: str) -> list[str]:
    """The string constants a function of the user's code compares its parameter ``param``
    with (``if attn_type == "softmax"``, ``attn_type.startswith("linformer")``), in the order
    written: the values the code branches on, its first branch first."""
    if isinstance(callee, type) or not inspect.isfunction(callee) or not _user_code(callee):
        return []
    body = _function_def(_tree(callee), callee.__name__)
    found: list[str] = []

    def named(node) -> str | None:
        return param if isinstance(node, ast.Name) and node.id == param else None

    for node in ast.walk(body) if body is not None else ():
        tested = _strings_tested(node, named)
        found += [text for text in (tested[1] if tested else ()) if text not in found]
    return found


def _default_of(callee, param: str) -> object:
    """The default of ``callee``'s parameter ``param`` (a constant: a number, a string, a
    bool), or None."""
    target = callee.__init__ if isinstance(callee, type) else callee
    try:
        default = inspect.signature(target).parameters[param].default
    except (TypeError, ValueError, KeyError):
        return None
    return default if isinstance(default, (int, float, str)) else None


def _read_field(node, is_config, fields: dict[str, Field], parts: Mapping = {}) -> None:
    path = _field_path(node, is_config, parts)
    if path is not None and len(path) >= 2:  # cfg.transformer["num_heads"], cfg.model.ch
        level = fields
        for name, by_key in path:
            got = level.setdefault(name, Field(name, by_key=by_key))
            level = got.children
        return
    got = None
    if isinstance(node, ast.Attribute) and is_config(node.value) and not node.attr.startswith("_"):
        got = fields.setdefault(node.attr, Field(node.attr))
    elif isinstance(node, ast.Subscript) and is_config(node.value) \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        got = fields.setdefault(node.slice.value, Field(node.slice.value, by_key=True))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and is_config(node.func.value) and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        got = fields.setdefault(node.args[0].value, Field(node.args[0].value, by_key=True))
        got.has_default = True  # cfg.get("k") is None when missing, cfg.get("k", 0) is 0
        if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            got.default = node.args[1].value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 \
            and is_config(node.args[0]) and isinstance(node.args[1], ast.Constant) \
            and isinstance(node.args[1].value, str):
        got = fields.setdefault(node.args[1].value, Field(node.args[1].value))
        if node.func.id == "hasattr" or len(node.args) == 3:
            got.has_default = True
            if len(node.args) == 3 and isinstance(node.args[2], ast.Constant):
                got.default = node.args[2].value
            elif len(node.args) == 3:  # getattr(cfg, "head_size", hidden // heads): left out,
                fields.setdefault(_OPTIONAL, set()).add(node.args[1].value)  # the code's own
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "len" and len(node.args) == 1 \
            and (name := _field_name(node.args[0], is_config)) is not None:
        fields.setdefault(name, Field(name)).sequence = True  # len(cfg.iter_loss)
    elif isinstance(node, (ast.For, ast.comprehension)) \
            and (name := _field_name(node.iter, is_config)) is not None:
        fields.setdefault(name, Field(name)).sequence = True  # for n in cfg.stages
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 \
            and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
            and (name := _field_name(node.comparators[0], is_config)) is not None:
        fields.setdefault(name, Field(name)).sequence = True  # i in cfg.iter_loss
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 \
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.In)):
        _compared(node, is_config, fields)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)) \
            and isinstance(node.left, ast.Attribute) and is_config(node.left.value) \
            and _names_heads(node.right):
        # cfg.n_attn % cfg.n_head: a width the heads split
        fields.setdefault(node.left.attr, Field(node.left.attr)).uses.add("C")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        sides = (node.left, node.right)
        if not any(isinstance(side, (ast.JoinedStr, ast.List, ast.Tuple)) or isinstance(
                side, ast.Constant) and not isinstance(side.value, (int, float)) for side in sides):
            for side in sides:  # cfg.observation_dim + cfg.action_dim + 2: counts
                if isinstance(side, ast.Attribute) and is_config(side.value) \
                        and not side.attr.startswith("_"):
                    fields.setdefault(side.attr, Field(side.attr)).counted = True
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 \
            and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
        left = node.left
        if isinstance(left, ast.Attribute) and is_config(left.value):
            fields.setdefault(left.attr, Field(left.attr)).compared_with_none = True
        elif isinstance(left, ast.Subscript) and is_config(left.value) \
                and isinstance(left.slice, ast.Constant):
            fields.setdefault(str(left.slice.value), Field(str(left.slice.value), by_key=True)
                              ).compared_with_none = True


def _names_heads(node) -> bool:
    """Whether ``node`` is a name or an attribute whose name states a head count."""
    name = node.id if isinstance(node, ast.Name) else \
        node.attr if isinstance(node, ast.Attribute) else None
    return name is not None and size_of(name, constructor=True) == "H"


def _compared(node: ast.Compare, is_config, fields: dict[str, Field]) -> None:
    """``cfg.kind == "a"``, ``cfg["kind"] in ("a", "b")``: the string constants a field is
    compared with, kept in the order the code names them (its first branch first)."""
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Attribute) and is_config(left.value):
        name, by_key = left.attr, False
    elif isinstance(left, ast.Subscript) and is_config(left.value) \
            and isinstance(left.slice, ast.Constant) and isinstance(left.slice.value, str):
        name, by_key = left.slice.value, True
    else:
        return
    values = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
    found = fields.setdefault(name, Field(name, by_key=by_key))
    other = _field_name(right, is_config) if isinstance(node.ops[0], ast.Eq) else None
    if other is not None and other != name:  # assert cfg["embedding_dim"] == cfg["transformer_dim"]
        found.equal_to.append(other)
        fields.setdefault(other, Field(other, by_key=by_key)).equal_to.append(name)
    found.compared_to.extend(v.value for v in values if isinstance(v, ast.Constant)
                             and isinstance(v.value, str) and v.value not in found.compared_to)


def _field_path(node, is_config, parts: Mapping = {}) -> list[tuple[str, bool]] | None:
    """``[(name, by key), ...]`` of a chain of reads from the config (``cfg.a["b"].get("c")``),
    outermost first; None when ``node`` is no such chain. ``parts``: names given to parts of
    the config, with their chains."""
    if isinstance(node, ast.Name) and node.id in parts:
        return list(parts[node.id])
    if is_config(node):
        return []
    if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
        inner, step = node.value, (node.attr, False)
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str):
        inner, step = node.value, (node.slice.value, True)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        inner, step = node.func.value, (node.args[0].value, True)
    else:
        return None
    path = _field_path(inner, is_config, parts)
    return None if path is None else path + [step]


# --- the values given to the fields -------------------------------------------------------------

def value_by_use(found: Field, dims: Mapping[str, int], name: str) -> object:
    """A config field no name of a size explains: an image's or a patch's side by its name, a
    width the heads split (``cfg.n_attn % cfg.n_head``) or one size the code hands it to as
    (``nn.Linear(cfg.d_model, cfg.pred_len)``), a count of layers (``range(cfg.e_layers)``), the
    first constant it is compared with (``cfg.model_type == "RWKV"``: its first branch), the
    default of the parameter it is handed to (``activation=cfg.activation``: "relu"), a small
    count for one the code adds or multiplies (``cfg.obs_dim + cfg.act_dim``), else None."""
    if (number := number_of(name, field=True)) is not None:
        return number
    if found.said is not None:
        return 4 * dims["C"] if found.said == _FFN else found.said
    if name in UNSET_SIDES:  # a patch's, a window's side, a kernel's size: what its name says,
        return UNSET_SIDES[name][0]  # before the width of the layer it is handed to
    uses = found.uses - {OUTPUT_FACTOR, DIVISOR} if len(found.uses) > 1 else found.uses
    if len(uses) == 1 and (use := next(iter(uses))) in dims:
        return dims[use]
    if uses == {LAYER_COUNT}:
        return 2
    if found.compared_to:
        return found.compared_to[0]
    if len(found.handed_defaults) == 1:
        return found.handed_defaults[0]
    rates = found.handed_defaults
    if rates and all(type(r) is float and 0.0 <= r < 1.0 for r in rates):
        return min(rates)  # rates its receivers disagree on (dropouts of 0.5 and 0.0): the least
    if found.sequence:
        return []  # a sequence nothing says the items of: none
    return COUNT if found.counted and not found.compared_with_none else None


def equal_fields(values: dict, fields: Mapping) -> dict:
    """``values`` with each field left None that the code asserts equal to another
    (``assert cfg["embedding_dim"] == cfg["transformer_dim"]``) given that one's value."""
    for name, found in fields.items():
        if values.get(name) is None and not found.children:
            values[name] = next((values[o] for o in found.equal_to if values.get(o) is not None), None)
    return values


#: a count the code computes with that nothing else sizes (``cfg.observation_dim``): small, and
#: no probe size, so that no axis it makes is read as one
COUNT = 3


def config_values(value, *, settings: bool = False) -> dict:
    """The fields of a config handed to a constructor: a dict's items, the attributes of a
    namespace or a dataclass, and (``settings``) of a plain settings object of a class of its
    own; {} for anything else (a layer, a tensor, a class, a function)."""
    if isinstance(value, dict):
        return value
    import torch

    plain = isinstance(value, SimpleNamespace) or is_dataclass(value) and not isinstance(value, type)
    if not plain and (not settings or isinstance(value, (type, torch.nn.Module, torch.Tensor)) or callable(value)):
        return {}
    fields = getattr(value, "__dict__", None)
    return fields if isinstance(fields, dict) else {}


class ReadConfig(dict):
    """A config made from the fields the code reads, that reads them as keys and as attributes
    (a nested config: ``cfg.transformer["num_heads"]``, ``cfg.model.ch``)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def same_named(config) -> object:
    """``config`` (a tree of dicts and namespaces) with each leaf left None given the value of a
    leaf of the same key elsewhere in the tree (``melencoder.encoder_hidden`` as wide as
    ``transformer.encoder_hidden``: what the key names is the same kind of size), or the side
    its key names (``kernel_size``: 3)."""
    known: dict = {}

    def items(node):
        return node.items() if isinstance(node, dict) else vars(node).items()

    def nested(value) -> bool:
        return isinstance(value, (dict, SimpleNamespace))

    def collect(node) -> None:
        for key, value in items(node):
            if nested(value):
                collect(value)
            elif value is not None:
                known.setdefault(key, value)

    def fill(node) -> None:
        for key, value in list(items(node)):
            if nested(value):
                fill(value)
            elif value is None and (key in known or key in UNSET_SIDES):
                found = known[key] if key in known else UNSET_SIDES[key][0]
                if isinstance(node, dict):
                    node[key] = found
                else:
                    setattr(node, key, found)

    if nested(config):
        collect(config)
        fill(config)
    return config
