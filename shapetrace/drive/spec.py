"""What to build and what to feed it: constructor arguments and forward inputs.

``--init`` and ``--input`` are parsed here, and, when the user gives neither, inferred from the
constructor's parameter names and from forward's jaxtyping annotations or parameter names. Every
size is a probe size from :class:`~shapetrace._dims.Dims`, so the trace can name each axis.

Importing this module does not import torch or jaxtyping (the pytest plugin reads config files
through it); :func:`make_input` imports torch when it runs.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..base.errors import TargetError, UsageError
from ..base.names import (
    CONFIG,
    DATA_INPUTS,
    DROPOUT,
    FFN,
    KV_HEADS,
    LAYERS,
    MASK_INPUT,
    PADDING_INPUTS,
    SOURCE_INPUTS,
    SWITCH_DEFAULTS,
    TOKEN_INPUTS,
    KEY_VALUE_INPUTS,
    dim_of_word,
    size_of,
)
from ..naming.hints import forward_hints, tensor_annotation
from .layout import swapped as _swapped
from .layout import time_first

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+|inf|nan)\Z", re.IGNORECASE)

# --init ---------------------------------------------------------------------------------------


def parse_init(text: str) -> InitArgs:
    """Parse ``--init KEY=VALUE[,KEY=VALUE...]`` into keyword arguments.

    A VALUE is an int, a float, ``true``/``false``, ``none``, or a string; a dim name such as
    ``C`` stays the string ``"C"`` and is resolved by :func:`resolve_init`. A quoted value
    (``'C'`` or ``"C"``) is always a string, never a dim name. Quote a string that contains a
    comma: ``act="gelu,tanh"``. An empty item (``a=1,,b=2``) is a usage error.

    >>> parse_init("d_in=C,context_length=16,dropout=0.0,qkv_bias=true")
    {'d_in': 'C', 'context_length': 16, 'dropout': 0.0, 'qkv_bias': True}
    """
    out: dict[str, object] = {}
    quoted: set[str] = set()
    for item in _split_items(text):
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq:
            raise UsageError(f"--init expects KEY=VALUE, got {item!r}")
        if not _NAME.match(key):
            raise UsageError(f"--init: {key!r} is not a valid argument name (in {item!r})")
        if key in out:
            raise UsageError(f"--init: {key!r} is given twice")
        raw = raw.strip()
        if not raw:
            raise UsageError(f"--init: no value for {key!r}: write {key}=VALUE")
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            quoted.add(key)
        out[key] = _parse_value(raw)
    return InitArgs(out, quoted=quoted)


class InitArgs(dict):
    """``--init``'s keyword arguments, and which values were quoted (``quoted``, their keys):
    a quoted value is a string even when it is a dim name."""

    def __init__(self, *args, quoted=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.quoted = frozenset(quoted)


def _split_items(text: str) -> list[str]:
    """Split on commas outside single or double quotes. One trailing comma is allowed; any
    other empty item (``a=1,,b=2``, ``,a=1``) is a usage error."""
    items, current, quote = [], [], None
    for char in text:
        if quote:
            current.append(char)
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if quote:
        raise UsageError(f"--init: unterminated {quote} quote in {text!r}")
    items.append("".join(current))
    items = [item.strip() for item in items]
    if len(items) > 1 and not items[-1]:
        items.pop()  # a trailing comma
    if not all(items):
        raise UsageError(f"--init: empty item in {text!r} (two commas in a row, or a leading "
                         f"comma)")
    return items


def _parse_value(raw: str) -> object:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    lowered = raw.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered == "none":
        return None
    if _INT.match(raw):
        return int(raw)
    if _FLOAT.match(raw):
        return float(raw)
    return raw


def resolve_init(init: Mapping[str, object], dims: Mapping[str, int]) -> dict[str, object]:
    """Replace every string value that is a dim name with its size; other values stay as given.
    A value that was quoted in ``--init`` (``InitArgs.quoted``) stays a string.

    >>> resolve_init({"d_in": "C", "act": "gelu"}, {"B": 5, "C": 143})
    {'d_in': 143, 'act': 'gelu'}
    >>> resolve_init(parse_init("name='C'"), {"B": 5, "C": 143})
    {'name': 'C'}
    """
    quoted = getattr(init, "quoted", frozenset())
    return {k: dims[v] if isinstance(v, str) and v in dims and k not in quoted else v
            for k, v in init.items()}


# --input --------------------------------------------------------------------------------------

#: accepted spellings -> the canonical dtype name kept in an InputSpec
DTYPE_ALIASES: dict[str, str] = {
    "float": "float", "float32": "float",
    "double": "double", "float64": "double",
    "half": "half", "float16": "half",
    "bfloat16": "bfloat16",
    "long": "long", "int64": "long",
    "int": "int", "int32": "int",
    "bool": "bool",
}
_TORCH_DTYPES = {
    "float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
    "long": "int64", "int": "int32", "bool": "bool",
}
_INTEGER_DTYPES = {"long", "int"}
_DTYPE_CHOICES = "float, double, half, bfloat16, long, int, bool"


@dataclass(frozen=True)
class InputSpec:
    """One forward argument: ``idx=B,T:long:V`` is ``InputSpec("idx", ("B", "T"), "long", "V")``.

    ``dims`` holds dim names, products of names and integers (``"3*C"``), or literal sizes.
    ``high`` bounds integer inputs, ``[0, high)``; it defaults to ``V``.
    """

    name: str
    dims: tuple[str | int, ...]
    dtype: str = "float"
    high: str | int | None = None

    def __str__(self) -> str:
        text = f"{self.name}={','.join(str(d) for d in self.dims)}"
        if self.dtype != "float" or self.high is not None:
            text += f":{self.dtype}"
        if self.high is not None:
            text += f":{self.high}"
        return text

    def shape(self, dims: Mapping[str, int]) -> tuple[int, ...]:
        """The concrete shape at these probe sizes."""
        return tuple(_size(d, dims, self) for d in self.dims)


def parse_input(text: str, dims: Mapping[str, int] | None = None) -> InputSpec:
    """Parse ``NAME=DIMS[:DTYPE[:HIGH]]``: ``x=B,T,C``, ``idx=B,T:long:V``, ``mask=T,T:bool``.

    With ``dims``, every dim name is checked against it.
    """
    where = f"input {text.strip()!r}"
    name, eq, rest = text.strip().partition("=")
    name = name.strip()
    if not eq or not name:
        raise UsageError(f"{where}: expected NAME=DIMS[:DTYPE[:HIGH]], e.g. x=B,T,C or idx=B,T:long:V")
    if not _NAME.match(name):
        raise UsageError(f"{where}: {name!r} is not a valid argument name")
    parts = rest.split(":")
    if len(parts) > 3:
        raise UsageError(f"{where}: too many ':' (expected NAME=DIMS[:DTYPE[:HIGH]])")
    if not parts[0].strip():
        raise UsageError(f"{where}: no dimensions after '=', e.g. {name}=B,T,C")
    groups = [group.strip() for group in parts[0].split(",")]
    if len(groups) > 1 and not groups[-1]:
        groups.pop()  # a trailing comma
    if not all(groups):
        raise UsageError(f"{where}: empty dimension (two commas in a row, or a leading comma), "
                         f"e.g. {name}=B,T,C")
    dim_items = [d for group in groups for d in group.split()]
    shape = tuple(_parse_dim(item, where) for item in dim_items)

    raw_dtype = parts[1].strip() if len(parts) > 1 else ""
    dtype = DTYPE_ALIASES.get(raw_dtype.lower() if raw_dtype else "float")
    if dtype is None:
        raise UsageError(f"{where}: unknown dtype {raw_dtype!r}; use one of {_DTYPE_CHOICES}")

    high: str | int | None = None
    raw_high = parts[2].strip() if len(parts) > 2 else ""
    if len(parts) > 2:
        if dtype not in _INTEGER_DTYPES:
            raise UsageError(f"{where}: HIGH only applies to integer inputs (long or int), not {dtype}")
        if not raw_high:
            raise UsageError(f"{where}: empty HIGH after the dtype; write e.g. {name}=B,T:long:V")
        high = _parse_dim(raw_high, where)
    spec = InputSpec(name, shape, dtype, high)
    if dims is not None:
        check_input(spec, dims)
    return spec


def _parse_dim(item: str, where: str) -> str | int:
    if _INT.match(item):
        size = int(item)
        if size <= 0:
            raise UsageError(f"{where}: size {size} must be positive")
        return size
    for factor in item.split("*"):
        if _INT.match(factor):
            if int(factor) <= 0:
                raise UsageError(f"{where}: size {factor} in {item!r} must be positive")
        elif not _NAME.match(factor):
            raise UsageError(f"{where}: {item!r} is not a dimension; use a name (T), a size (7) or a product (3*C)")
    return item


def check_input(spec: InputSpec, dims: Mapping[str, int]) -> None:
    """Raise UsageError when ``spec`` uses a dim name that ``dims`` does not define."""
    for item in (*spec.dims, *([spec.high] if spec.high is not None else [])):
        if isinstance(item, str):
            for factor in item.split("*"):
                if not _INT.match(factor) and factor not in dims:
                    raise UsageError(_unknown_dim(factor, f"input {str(spec)!r}", dims))


def _unknown_dim(name: str, where: str, dims: Mapping[str, int]) -> str:
    close = difflib.get_close_matches(name, list(dims), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return (f"{where}: unknown dimension {name!r} ({hint}known: {', '.join(dims)}); "
            f"define it with --dims {name}=SIZE")


def _size(item: str | int, dims: Mapping[str, int], spec: InputSpec) -> int:
    if isinstance(item, int):
        return item
    size = 1
    for factor in item.split("*"):
        if _INT.match(factor):
            size *= int(factor)
        elif factor in dims:
            size *= dims[factor]
        else:
            raise UsageError(_unknown_dim(factor, f"input {str(spec)!r}", dims))
    return size


def make_input(spec: InputSpec, dims: Mapping[str, int], *, generator=None):
    """A tensor for ``spec`` at these probe sizes.

    Floats are ``randn``; integers are uniform in ``[0, HIGH)`` (``HIGH`` defaults to ``V``),
    except a 0/1 ``attention_mask`` (B, T), which is right-padded as a tokenizer makes it;
    a bool input that is square in its last two axes is a lower-triangular causal mask
    (True = may attend), any other bool input is random.
    """
    import torch

    shape = spec.shape(dims)
    dtype = getattr(torch, _TORCH_DTYPES[spec.dtype])
    if spec.dtype in _INTEGER_DTYPES:
        high = _size(spec.high if spec.high is not None else "V", dims, spec)
        if high == 2 and spec.name in PADDING_INPUTS and len(shape) == 2:
            # each sequence: its real tokens first (at least one), then padding, as tokenized
            lengths = torch.randint(1, shape[1] + 1, (shape[0], 1), generator=generator)
            return (torch.arange(shape[1]) < lengths).to(dtype)
        return torch.randint(0, high, shape, generator=generator, dtype=dtype)
    if spec.dtype == "bool":
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            tril = torch.ones(shape[-2:], dtype=torch.bool).tril()
            return tril.expand(shape).clone()
        return torch.rand(shape, generator=generator) < 0.5
    return torch.randn(shape, generator=generator, dtype=dtype)


# Inferring forward inputs ---------------------------------------------------------------------



def infer_inputs(cls_or_forward: type | Callable, dims: Mapping[str, int]) -> list[InputSpec]:
    """The inputs to pass to forward, in its positional order.

    Each parameter is read from its jaxtyping annotation (``Float[Tensor, "B T C"]``) when it
    has one, else from its name (``x`` -> B,T,C; ``idx`` -> B,T long; ``context`` -> B,S,C).
    Parameters with defaults are left out unless annotated with a tensor type; masks with
    defaults are always left out. Inference stops at the first parameter left out, so the list
    can be passed positionally.
    """
    forward, owner = _forward_of(cls_or_forward)
    try:
        sig = inspect.signature(forward)
    except (TypeError, ValueError):
        raise TargetError(f"cannot read the signature of {owner}.forward") from None
    params = [p for p in sig.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if params and params[0].name == "self" and not inspect.ismethod(forward):
        params = params[1:]
    variadic = [("*" if p.kind is p.VAR_POSITIONAL else "**") + p.name
                for p in sig.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if variadic and not any(p.default is p.empty for p in params):
        raise UsageError(f"cannot infer the inputs of {owner}: its forward takes "
                         f"{'/'.join(variadic)}; give each input in order with "
                         f"--input NAME=DIMS, e.g. --input x=B,T,C")
    hints = forward_hints(forward, params)
    names = {p.name for p in params}

    specs: list[InputSpec] = []
    missing: list[str] = []
    suggestions: list[str] = []
    for p in params:
        annotation = tensor_annotation(hints.get(p.name))
        has_default = p.default is not p.empty
        if has_default and (annotation is None or MASK_INPUT.search(p.name)):
            break
        if annotation is not None:
            spec = _spec_from_annotation(p.name, annotation, dims, owner)
        else:
            spec = _spec_from_name(p.name, names)
        if spec is None:
            missing.append(p.name)
            suggestions.append(str(InputSpec(p.name, ("T", "T"), "bool")) if MASK_INPUT.search(p.name)
                               else f"{p.name}=...")
        else:
            if annotation is None and time_first(forward, [q.name for q in params],
                                                   cls_or_forward if isinstance(cls_or_forward, type) else None):
                spec = _swapped(spec)
            specs.append(spec)
            suggestions.append(str(spec))
    if missing:
        args = " ".join(f"--input {s}" for s in suggestions)
        which = ", ".join(repr(m) for m in missing)
        raise UsageError(f"cannot infer forward input{'s' if len(missing) > 1 else ''} {which} of "
                         f"{owner}: give every input in forward's order, e.g. {args}")
    return specs


def as_tokens(specs: list[InputSpec]) -> list[InputSpec] | None:
    """``specs`` with the name-inferred embeddings (``src=B,T,C``) as token ids instead
    (``src=B,T:long``), or None when there is none: a name such as ``src``, ``x`` or ``tgt``
    holds ids in one model and vectors in another, and an embedding that was handed floats
    says which."""
    out, changed = [], False
    for spec in specs:
        if (spec.dtype == "float" and spec.dims in (("B", "T", "C"), ("B", "S", "C"),
                                                    ("T", "B", "C"), ("S", "B", "C"))
                and (spec.name in DATA_INPUTS or spec.name in SOURCE_INPUTS)):
            spec, changed = InputSpec(spec.name, spec.dims[:2], "long"), True
        out.append(spec)
    return out if changed else None


def _forward_of(obj) -> tuple[Callable, str]:
    if isinstance(obj, type):
        forward = getattr(obj, "forward", None)
        owner = obj.__qualname__
        if forward is None or getattr(forward, "__name__", "") == "_forward_unimplemented":
            raise TargetError(f"{owner} defines no forward() method")
        return forward, owner
    if not inspect.isroutine(obj) and callable(getattr(obj, "forward", None)):
        obj = obj.forward  # a module instance
    owner = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    owner = owner.rsplit(".forward", 1)[0] if owner.endswith(".forward") else owner
    return obj, owner


def _spec_from_annotation(name: str, ann, dims: Mapping[str, int], owner: str) -> InputSpec:
    where = f"annotation of {owner}.forward argument {name!r} ({ann.dim_str!r})"
    shape: list[str | int] = []
    tokens = ann.dim_str.split()
    for position, dim in enumerate(ann.dims):
        kind = type(dim).__name__
        if kind == "_FixedDim":
            shape.append(dim.size)
        elif kind == "_NamedDim":
            shape.append(_dim_name(dim.name, dims, where))
        elif kind == "_SymbolicDim":
            # "C={self.n_embd}" ties an axis to the constructor: the name before "=" sizes it.
            token = tokens[position] if len(tokens) == len(ann.dims) else ""
            label = token.split("=", 1)[0].lstrip("*#?_") if "=" in token else ""
            shape.append(_dim_name(label, dims, where) if label
                         else _symbolic_dim(dim.elem, dims, where))
        elif kind in ("_NamedVariadicDim", "_AnonymousVariadicDim") and position == 0:
            shape.append("B")  # leading "*batch" / "...": one batch axis
        else:
            raise UsageError(f"{where}: cannot choose a size for every axis; "
                             f"pass --input {name}=DIMS")
    return InputSpec(name, tuple(shape), _dtype_of(ann.dtypes))


def _dim_name(name: str, dims: Mapping[str, int], where: str) -> str:
    if name in dims:
        return name
    alias = dim_of_word(name)
    if alias is not None and alias in dims:
        return alias
    raise UsageError(_unknown_dim(name, where, dims))


def _symbolic_dim(expr: str, dims: Mapping[str, int], where: str) -> str:
    """``3*C`` or ``H*d`` in an annotation; anything else cannot be sized from names alone."""
    compact = expr.replace(" ", "")
    factors = compact.split("*")
    if not all(_INT.match(f) or _NAME.match(f) for f in factors):
        raise UsageError(f"{where}: cannot size {expr!r}; pass --input with explicit dims")
    return "*".join(f if _INT.match(f) else _dim_name(f, dims, where) for f in factors)


def _dtype_of(dtypes) -> str:
    if not isinstance(dtypes, (tuple, list, set, frozenset)):
        return "float"  # Shaped[...]: any dtype
    for jax_name, ours in (("float32", "float"), ("bool", "bool"), ("int64", "long"),
                           ("float64", "double"), ("float16", "half"), ("bfloat16", "bfloat16"),
                           ("int32", "int")):
        if jax_name in dtypes:
            return ours
    if any(str(d).startswith(("int", "uint")) for d in dtypes):
        return "long"
    return "float"


def _spec_from_name(name: str, all_names: set[str]) -> InputSpec | None:
    if name in TOKEN_INPUTS:
        return InputSpec(name, ("B", "T"), "long")
    if name in SOURCE_INPUTS:
        return InputSpec(name, ("B", "S", "C"))
    if name in PADDING_INPUTS and all_names & TOKEN_INPUTS:
        return InputSpec(name, ("B", "T"), "long", 2)
    if name in KEY_VALUE_INPUTS and all_names & {"query", "q"}:
        return InputSpec(name, ("B", "S", "C"))
    if name in DATA_INPUTS:
        return InputSpec(name, ("B", "T", "C"))
    return None


# Inferring constructor arguments --------------------------------------------------------------



def infer_init(cls: type, dims: Mapping[str, int], *,
               given: Mapping[str, object] | None = None) -> dict[str, object]:
    """Keyword arguments that build ``cls`` at the probe sizes ``dims``.

    Widths, heads, head sizes, lengths and vocabulary sizes come from parameter names (see
    SPEC section 4); dropout is 0.0 so the module is deterministic; other parameters with
    defaults keep them. ``given`` (``--init`` or a config's ``init``) takes precedence; its dim
    names are resolved. A config object parameter is built when it is annotated with (or its
    module defines exactly one) dataclass whose name ends in ``Config``.
    """
    given = resolve_init(given or {}, dims)
    owner = cls.__qualname__
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return dict(given)
    params = [p for p in sig.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    known = {p.name for p in params}
    for key in given:
        if key not in known and not takes_kwargs:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {', '.join(sorted(known)) or 'none'}"
            raise UsageError(f"--init: {owner}() has no argument {key!r}{hint}")

    out: dict[str, object] = {}
    missing: list[str] = []
    for p in params:
        if p.name in given:
            out[p.name] = given[p.name]
            continue
        value = _infer_argument(p, dims)
        if value is not _MISSING:
            out[p.name] = value
        elif p.name in CONFIG:
            out[p.name] = _config_object(cls, p, dims)
        else:
            missing.append(p.name)
    for key, value in given.items():
        out.setdefault(key, value)
    if missing:
        names = ", ".join(repr(m) for m in missing)
        example = ",".join(f"{m}=VALUE" for m in missing)
        plural = "s" if len(missing) > 1 else ""
        raise TargetError(f"cannot infer constructor argument{plural} {names} of {owner}: "
                          f"pass --init {example}")
    return out


_MISSING = object()


def _infer_argument(p: inspect.Parameter, dims: Mapping[str, int]) -> object:
    name, default = p.name, p.default
    has_default = default is not p.empty
    if name in KV_HEADS:
        return default if has_default else dims["H"]
    dim = size_of(name, constructor=True)
    if dim is not None:
        return dims[dim]
    if name in FFN:
        return 4 * dims["C"]
    if name in LAYERS:
        return 2
    if has_default and isinstance(default, bool):
        return default  # use_dropout=True, bias=False: a switch, not a size
    if DROPOUT.search(name):
        return 0.0
    if has_default:
        return default
    if name in SWITCH_DEFAULTS:
        return SWITCH_DEFAULTS[name]
    return _MISSING


def _config_object(cls: type, p: inspect.Parameter, dims: Mapping[str, int]) -> object:
    """Build a config dataclass for ``p`` from field names, or explain why that is not possible."""
    owner = cls.__qualname__
    config_cls = _config_class(cls, p)
    if config_cls is None and p.annotation is p.empty:
        found = _config_dict(cls, dims)
        if found is not None:
            return found
    if config_cls is None:
        raise TargetError(
            f"cannot infer constructor argument {p.name!r} of {owner}: it is a config object; "
            f"annotate it with a dataclass ({p.name}: MyConfig) or give {owner} keyword "
            f"arguments and pass them with --init or a config file's init")
    try:
        return config_cls(**infer_init(config_cls, dims))
    except TargetError as exc:
        raise TargetError(f"{owner}({p.name}: {config_cls.__qualname__}): {exc}") from None


def _config_dict(cls: type, dims: Mapping[str, int]) -> dict | None:
    """The module's one dict of sizes (``GPT_CONFIG_124M = {"emb_dim": 768, "n_heads": 12}``,
    read by the classes as ``cfg["emb_dim"]``), copied at the probe sizes; None when there is
    none, or several that differ in their keys."""
    module = sys.modules.get(cls.__module__)
    found = [v for k, v in vars(module).items() if not k.startswith("_") and isinstance(v, dict)
             and any(size_of(key, constructor=True) == "C" for key in v)
             and any(size_of(key, constructor=True) == "H" for key in v)] if module else []
    if not found or len({tuple(sorted(map(str, d))) for d in found}) != 1:
        return None
    return {key: _infer_argument(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY,
                                                   default=value), dims)
            if isinstance(key, str) and isinstance(value, (int, float)) else value
            for key, value in found[0].items()}


def _config_class(cls: type, p: inspect.Parameter) -> type | None:
    annotation = p.annotation
    if isinstance(annotation, str):
        module = sys.modules.get(cls.__module__)
        annotation = getattr(module, annotation, None) if module else None
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    if annotation is not p.empty:
        return None
    module = sys.modules.get(cls.__module__)
    candidates = [v for k, v in vars(module).items()
                  if isinstance(v, type) and dataclasses.is_dataclass(v)
                  and k.lower().endswith(("config", "cfg"))] if module else []
    return candidates[0] if len(candidates) == 1 else None
