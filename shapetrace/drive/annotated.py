"""Forward inputs read from their jaxtyping annotations (``Float[Tensor, "B T C"]``): each axis
named as a probe dim, by its name or its word (``batch`` -> B), ``3*C`` kept as written, a size
tied to the constructor (``C={self.n_embd}``) by the name before ``=``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..base.errors import UsageError
from ..base.names import dim_of_word
from ..base.specs import IDENTIFIER, INTEGER, InputSpec, UnknownAxis, unknown_dim


def spec_from_annotation(name: str, ann, dims: Mapping[str, int], owner: str) -> InputSpec:
    """The input spec a jaxtyping annotation of forward's argument ``name`` gives: its named
    axes as the probe's dims (by name or by word), ``3*C`` as written, a leading ``*batch`` as
    B, its dtype."""
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
    raise UnknownAxis(unknown_dim(name, where, dims), name)


def _symbolic_dim(expr: str, dims: Mapping[str, int], where: str) -> str:
    """``3*C`` or ``H*d`` in an annotation; anything else cannot be sized from names alone."""
    compact = expr.replace(" ", "")
    factors = compact.split("*")
    if not all(INTEGER.match(f) or IDENTIFIER.match(f) for f in factors):
        raise UsageError(f"{where}: cannot size {expr!r}; pass --input with explicit dims")
    return "*".join(f if INTEGER.match(f) else _dim_name(f, dims, where) for f in factors)


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
