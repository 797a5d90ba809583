"""Reading jaxtyping annotations: the forward parameters that carry an array annotation, their
dim tokens, and the sizes those tokens bind (``x: Float[Tensor, "batch T C"]`` with x of shape
``(2, 10, 64)`` binds B=2, T=10, C=64). Constructor and input inference (``drive.infer``) and the
sizes a run proves (``naming.proven``) both read annotations through here.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable

from ..base.names import dim_of_word

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def annotation_name(token: str) -> str | None:
    """The dim name a jaxtyping token binds, or None when it binds no single size.

    ``"B"`` -> B, ``"batch"`` -> B, ``"C={self.n_embd}"`` -> C, ``"#T"`` -> T (broadcastable);
    ``"3*C"``, ``"*batch"``, ``"..."``, ``"_"``, ``"?T"`` (a size that may vary) and numbers
    -> None.
    """
    if token.startswith(("*", "?", "_")) or token == "...":
        return None
    name = token.split("=", 1)[0] if "=" in token else token
    name = name.lstrip("#").rstrip("#")
    if not _IDENTIFIER.match(name):
        return None  # 3*C, T-1, a fixed size
    return dim_of_word(name) or name


def variadic_positions(tokens: list[str]) -> list[int]:
    """Where the variadic tokens are (``*batch``, ``#*batch``, ``...``): each stands for any
    number of axes."""
    return [i for i, t in enumerate(tokens) if t.lstrip("#").startswith("*") or t == "..."]


def align(tokens: list[str], shape: tuple[int, ...]) -> list[tuple[str, int]] | None:
    """``(token, size)`` for each fixed token of an annotation laid on ``shape``: the tokens
    before a variadic one meet the leading axes, those after it the trailing ones. None when
    the shape cannot fit (another number of axes, fewer than the fixed tokens, two variadic
    tokens)."""
    variadic = variadic_positions(tokens)
    if len(variadic) > 1:
        return None
    if not variadic:
        return list(zip(tokens, shape)) if len(tokens) == len(shape) else None
    if len(shape) < len(tokens) - 1:
        return None
    cut = variadic[0]
    tail = len(tokens) - cut - 1
    return [*zip(tokens[:cut], shape[:cut]), *zip(tokens[cut + 1:], shape[len(shape) - tail:])]


def bind_tokens(tokens: list[str], shape: tuple[int, ...]) -> dict[str, int] | None:
    """The sizes ``shape`` gives the names in ``tokens`` (one variadic token may stand for any
    number of axes); None when the shape does not fit the annotation at all."""
    pairs = align(tokens, shape)
    if pairs is None:
        return None
    out: dict[str, int] = {}
    for token, size in pairs:
        name = annotation_name(token)
        if name is None or size <= 1:  # a broadcast axis of 1 says nothing about the name
            continue
        if out.setdefault(name, size) != size:
            return None  # the annotation is violated: annotation-mismatch says so, not names
    return out


def forward_hints(fn: Callable, params: list[inspect.Parameter]) -> dict[str, object]:
    """Parameter annotations with string annotations (``from __future__``) evaluated."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # one unresolvable annotation: evaluate the others one by one
        pass
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    out = {}
    for p in params:
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, dict(namespace))  # noqa: S307 - the user's own annotation
            except Exception:
                continue
        out[p.name] = ann
    return out


def tensor_annotation(ann):
    """The jaxtyping array type in ``ann`` (unwrapping Optional/Union/Annotated), or None."""
    if ann is None:
        return None
    if all(hasattr(ann, attr) for attr in ("dim_str", "dims", "dtypes")):
        return ann
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return tensor_annotation(typing.get_args(ann)[0])
    if origin is typing.Union or origin is types.UnionType:
        for arg in typing.get_args(ann):
            found = tensor_annotation(arg)
            if found is not None:
                return found
    return None


def annotated_params(module) -> tuple | None:
    """``((position, tokens), ...)`` for forward's positional parameters with a jaxtyping
    array annotation, or None when it has none (most modules: nn.Linear, nn.LayerNorm)."""
    forward = getattr(module, "forward", None)
    if forward is None or not may_annotate_arrays(forward):
        return None  # nothing annotated, or plain classes only (nn.Linear's ``input: Tensor``)
    try:
        params = [p for p in inspect.signature(forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    hints = forward_hints(forward, params)
    out = []
    for position, p in enumerate(params):
        annotation = tensor_annotation(hints.get(p.name))
        dim_str = getattr(annotation, "dim_str", None)
        if isinstance(dim_str, str) and dim_str.strip():
            out.append((position, dim_str.split()))
    return tuple(out) or None


def may_annotate_arrays(forward) -> bool:
    """Whether a parameter of ``forward`` has an annotation that may be a jaxtyping array
    type; False for nothing annotated or plain classes only (nn.Linear's ``input: Tensor``).
    Read from the raw annotations alone: nothing is evaluated."""
    raw = getattr(inspect.unwrap(forward), "__annotations__", None)
    return bool(raw) and any(_may_be_array(v) for k, v in raw.items() if k != "return")


#: string annotations that are never an array type
_PLAIN = frozenset(("Tensor", "torch.Tensor", "int", "float", "bool", "str", "None"))


def _may_be_array(annotation) -> bool:
    """Whether a raw annotation may hold a jaxtyping array type: one itself, a string to
    evaluate (``from __future__ import annotations``), or a typing construct around one
    (``Optional[...]``, ``Annotated[...]``)."""
    if isinstance(annotation, str):  # an alias's name ("BTC") may stand for one too
        return annotation not in _PLAIN
    return hasattr(annotation, "dim_str") or typing.get_origin(annotation) is not None
