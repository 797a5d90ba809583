"""``--init`` and ``--input`` as data: parsing them, resolving dim names, making the tensors.

``parse_init("d_in=C,dropout=0.0")`` gives keyword arguments whose dim names
``resolve_init`` turns into sizes; ``parse_input("idx=B,T:long:V")`` gives an :class:`InputSpec`
that ``make_input`` turns into a tensor at the given sizes. Inferring either from a module's own
code is the driver's (``drive.infer``).

Importing this module does not import torch (the pytest plugin reads config files through
it); :func:`make_input` imports torch when it runs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import UsageError
from .names import PADDING_INPUTS

#: a Python identifier; an integer literal
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
INTEGER = re.compile(r"[+-]?\d+\Z")
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
        if not all(IDENTIFIER.match(part) for part in key.split(".")):
            raise UsageError(f"--init: {key!r} is not a valid argument name (in {item!r}); "
                             f"a field of a config argument is written cfg.n_embd")
        if key in out:
            raise UsageError(f"--init: {key!r} is given twice")
        raw = raw.strip()
        if not raw:
            raise UsageError(f"--init: no value for {key!r}: write {key}=VALUE")
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            quoted.add(key)
        out[key] = _parse_value(raw)
    return InitArgs(out, quoted=quoted)


def parse_inits(texts: list[str]) -> InitArgs:
    """Several ``--init`` flags, as one: each parsed by :func:`parse_init`; a key given by two
    of them is a usage error, as within one."""
    out: dict[str, object] = {}
    quoted: set[str] = set()
    for text in texts:
        found = parse_init(text)
        for key in found.keys() & out.keys():
            raise UsageError(f"--init: {key!r} is given twice")
        out.update(found)
        quoted |= found.quoted
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
    if INTEGER.match(raw):
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
    out: dict[str, object] = {}
    for key, value in init.items():
        if isinstance(value, Mapping):  # a nested table: the fields of a config argument
            value = resolve_init(value, dims)
        elif isinstance(value, str) and value in dims and key not in quoted:
            value = dims[value]
        if "." in key:  # cfg.n_embd=C: a field of the config argument cfg
            head, _, rest = key.partition(".")
            fields = out.setdefault(head, {})
            if not isinstance(fields, dict):
                raise UsageError(f"--init: {head!r} is given both as a value and with fields")
            fields.update(resolve_init({rest: value}, {}))
        else:
            if isinstance(out.get(key), dict) and isinstance(value, Mapping):
                out[key].update(value)
            else:
                out[key] = value
    return out


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
_DTYPE_CHOICES = "float, double, half, bfloat16, long, int, bool, mask-keep, mask-drop, mask-add, mask-mul"
#: the spellings of a mask's meaning -> InputSpec.mask: ``mask-keep`` True/1 = may attend (as
#: ``masked_fill(mask == 0, -inf)`` and SDPA's boolean ``attn_mask`` read it), ``mask-drop``
#: True = masked out (``masked_fill(mask, -inf)``), ``mask-add`` a float added to the scores,
#: ``mask-mul`` a float multiplied into the values (1 = a real position, 0 = padding: ``x * x_mask``)
MASK_MEANINGS = {"mask-keep": "keep", "mask-drop": "drop", "mask-add": "add", "mask-mul": "mul"}
#: the meanings whose mask is a float, not a bool
FLOAT_MASKS = frozenset(("add", "mul"))


@dataclass(frozen=True)
class InputSpec:
    """One forward argument: ``idx=B,T:long:V`` is ``InputSpec("idx", ("B", "T"), "long", "V")``.

    ``dims`` holds dim names, products of names and integers (``"3*C"``) and sums of them
    (``"2*T-1"``, a table of relative positions), or literal sizes.
    ``high`` bounds integer inputs, ``[0, high)``; it defaults to ``V``. A float input with a
    ``high`` holds whole numbers in ``[0, high)`` (codes the forward casts to indices).
    """

    name: str
    dims: tuple[str | int, ...]
    dtype: str = "float"
    high: str | int | None = None
    #: the lowest integer value: token ids above the special ones (padding, start, end) the
    #: module was built with, so that no guessed token is padding by chance
    low: int = 0
    #: what a mask's values mean (``MASK_MEANINGS``): "keep" (True/1 = may attend), "drop"
    #: (True = masked out), "add" (a float added to the scores: 0 or -inf) or "mul" (a float
    #: 0/1 multiplied into the values, each sequence real then padded); None: no mask
    mask: str | None = None

    def __str__(self) -> str:
        text = f"{self.name}={','.join(str(d) for d in self.dims)}"
        if self.mask is not None:
            return f"{text}:mask-{self.mask}"
        if self.dtype != "float" or self.high is not None:
            text += f":{self.dtype}"
        if self.high is not None:
            text += f":{self.high}"
        return text

    def shape(self, dims: Mapping[str, int]) -> tuple[int, ...]:
        """The concrete shape at these probe sizes."""
        return tuple(_size(d, dims, self) for d in self.dims)


@dataclass(frozen=True)
class ValueInput:
    """A forward argument that is no tensor, passed as it is: ``start_pos=0``, or None for an
    optional input forward tests with ``is None``."""

    name: str
    value: object = None

    def __str__(self) -> str:
        return f"{self.name}={self.value!r}"


def parse_input(text: str, dims: Mapping[str, int] | None = None) -> InputSpec:
    """Parse ``NAME=DIMS[:DTYPE[:HIGH]]``: ``x=B,T,C``, ``idx=B,T:long:V``, ``mask=T,T:bool``.

    With ``dims``, every dim name is checked against it.
    """
    where = f"input {text.strip()!r}"
    name, eq, rest = text.strip().partition("=")
    name = name.strip()
    if not eq or not name:
        raise UsageError(f"{where}: expected NAME=DIMS[:DTYPE[:HIGH]], e.g. x=B,T,C or idx=B,T:long:V")
    if not IDENTIFIER.match(name):
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
    meaning = MASK_MEANINGS.get(raw_dtype.lower())
    if meaning is not None:
        if len(parts) > 2:
            raise UsageError(f"{where}: nothing follows a mask's meaning (mask-{meaning})")
        spec = InputSpec(name, shape, "float" if meaning in FLOAT_MASKS else "bool", mask=meaning)
        if dims is not None:
            check_input(spec, dims)
        return spec
    dtype = DTYPE_ALIASES.get(raw_dtype.lower() if raw_dtype else "float")
    if dtype is None:
        raise UsageError(f"{where}: unknown dtype {raw_dtype!r}; use one of {_DTYPE_CHOICES}")

    high: str | int | None = None
    raw_high = parts[2].strip() if len(parts) > 2 else ""
    if len(parts) > 2:
        if dtype == "bool":
            raise UsageError(f"{where}: HIGH does not apply to bool inputs")
        if not raw_high:
            raise UsageError(f"{where}: empty HIGH after the dtype; write e.g. {name}=B,T:long:V")
        high = _parse_dim(raw_high, where)
    spec = InputSpec(name, shape, dtype, high)
    if dims is not None:
        check_input(spec, dims)
    return spec


def _parse_dim(item: str, where: str) -> str | int:
    if INTEGER.match(item):
        size = int(item)
        if size <= 0:
            raise UsageError(f"{where}: size {size} must be positive")
        return size
    for factor in _factors(item):
        if INTEGER.match(factor):
            if int(factor) <= 0:
                raise UsageError(f"{where}: size {factor} in {item!r} must be positive")
        elif not IDENTIFIER.match(factor):
            raise UsageError(f"{where}: {item!r} is not a dimension; use a name (T), a size (7), "
                             f"a product (3*C) or a sum of them (2*T-1)")
    return item


def _terms(item: str) -> list[tuple[int, str]]:
    """``2*T-1`` -> ``[(1, "2*T"), (-1, "1")]``: a size written as a sum of products."""
    out, sign, start = [], 1, 0
    for i, ch in enumerate(item):
        if ch in "+-" and i > start:
            out.append((sign, item[start:i]))
            sign, start = (1 if ch == "+" else -1), i + 1
    out.append((sign, item[start:]))
    return out


def _factors(item: str) -> list[str]:
    return [factor for _, term in _terms(item) for factor in term.split("*")]


def check_input(spec: InputSpec, dims: Mapping[str, int]) -> None:
    """Raise UsageError when ``spec`` uses a dim name that ``dims`` does not define."""
    for item in (*spec.dims, *([spec.high] if spec.high is not None else [])):
        if isinstance(item, str):
            for factor in _factors(item):
                if not INTEGER.match(factor) and factor not in dims:
                    raise UsageError(unknown_dim(factor, f"input {str(spec)!r}", dims))


class UnknownAxis(UsageError):
    """An annotation names an axis no dimension stands for (``text: Int['b nt']``)."""

    def __init__(self, message: str, axis: str):
        super().__init__(message)
        self.axis = axis


def unknown_dim(name: str, where: str, dims: Mapping[str, int]) -> str:
    close = difflib.get_close_matches(name, list(dims), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return (f"{where}: unknown dimension {name!r} ({hint}known: {', '.join(dims)}); "
            f"define it with --dims {name}=SIZE")


def _size(item: str | int, dims: Mapping[str, int], spec: InputSpec) -> int:
    if isinstance(item, int):
        return item
    total = 0
    for sign, term in _terms(item):
        size = 1
        for factor in term.split("*"):
            if INTEGER.match(factor):
                size *= int(factor)
            elif factor in dims:
                size *= dims[factor]
            else:
                raise UsageError(unknown_dim(factor, f"input {str(spec)!r}", dims))
        total += sign * size
    if total <= 0:
        raise UsageError(f"input {str(spec)!r}: {item} is {total} at these sizes; a size must be positive")
    return total


def make_input(spec: InputSpec, dims: Mapping[str, int], *, generator=None):
    """A tensor for ``spec`` at these probe sizes.

    Floats are ``randn`` (whole numbers in ``[0, HIGH)`` when HIGH is given: codes the forward
    casts to indices); integers are uniform in ``[0, HIGH)`` (``HIGH`` defaults to ``V``),
    except a 0/1 ``attention_mask`` (B, T), which is right-padded as a tokenizer makes it;
    a bool input that is square in its last two axes is a lower-triangular causal mask
    (True = may attend), any other bool input is random.
    """
    import torch

    shape = spec.shape(dims)
    dtype = getattr(torch, _TORCH_DTYPES[spec.dtype])
    if spec.mask == "mul":
        return _padding(shape, spec.dims.index("T") if "T" in spec.dims else len(shape) - 1,
                        generator).to(dtype)
    if spec.mask is not None:
        return make_mask(spec.mask, shape, generator=generator)
    if spec.dtype in _INTEGER_DTYPES:
        high = _size(spec.high if spec.high is not None else "V", dims, spec)
        if high == 2 and spec.name in PADDING_INPUTS and len(shape) == 2:
            # each sequence: its real tokens first (at least one), then padding, as tokenized
            lengths = torch.randint(1, shape[1] + 1, (shape[0], 1), generator=generator)
            return (torch.arange(shape[1]) < lengths).to(dtype)
        low = spec.low if spec.low < high else 0
        return torch.randint(low, high, shape, generator=generator, dtype=dtype)
    if spec.dtype == "bool":
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            tril = torch.ones(shape[-2:], dtype=torch.bool).tril()
            return tril.expand(shape).clone()
        return torch.rand(shape, generator=generator) < 0.5
    if spec.high is not None:  # whole numbers, as floats: codes the forward makes indices
        high = _size(spec.high, dims, spec)
        return torch.randint(0, high, shape, generator=generator).to(dtype)
    return torch.randn(shape, generator=generator, dtype=dtype)


def _padding(shape: tuple[int, ...], axis: int, generator):
    """A 0/1 mask of ``shape``: along ``axis``, each sequence's real positions first (at least
    one), then padding, as lengths make it; the lengths vary along the first axis (the batch)."""
    import torch

    lengths = torch.randint(1, shape[axis] + 1, (shape[0],), generator=generator)
    along = [1] * len(shape)
    along[axis] = shape[axis]
    per = [1] * len(shape)
    per[0] = shape[0]
    real = torch.arange(shape[axis]).reshape(along) < lengths.reshape(per)
    return real.expand(shape).clone()


def make_mask(meaning: str, shape: tuple[int, ...], *, generator=None):
    """An attention mask of ``shape`` with the given meaning (``InputSpec.mask``): square in its
    last two axes, the causal pattern; otherwise about a third of the keys masked at random, and
    every query keeps at least one key (a row with none is NaN in any correct code)."""
    import torch

    if len(shape) >= 2 and shape[-1] == shape[-2]:
        keep = torch.ones(shape[-2:], dtype=torch.bool).tril().expand(shape).clone()
    elif len(shape) >= 1:
        keep = torch.rand(shape, generator=generator) >= 1 / 3
        rows = keep.reshape(-1, shape[-1])
        kept = torch.randint(0, shape[-1], (rows.shape[0],), generator=generator)
        rows[torch.arange(rows.shape[0]), kept] = True
        keep = rows.reshape(shape)
    else:
        keep = torch.ones(shape, dtype=torch.bool)
    if meaning == "drop":
        return ~keep
    if meaning == "add":
        return torch.zeros(shape).masked_fill(~keep, float("-inf"))
    return keep
