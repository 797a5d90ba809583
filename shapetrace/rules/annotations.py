"""annotation-mismatch: a jaxtyping/beartype violation, as one readable verdict.

A shape annotation that fails at run time raises a chain of three or four exceptions (jaxtyping's
``TypeCheckError``, raised from another one, raised from beartype's ``BeartypeCallHint*Violation``)
whose useful facts are spread over their texts: which function, which argument, the annotation,
the actual shape, and the reason. ``annotation_diagnostic`` gathers them from the chain and says
it in one line, in the annotation's own dim names::

    x: dim C is 29, expected 143 as set by n_embd

The texts read here are those of jaxtyping 0.3.11 and beartype 0.23 with torch tensors:

- jaxtyping ``TypeCheckError``: "Type-check error whilst checking the parameters of M.forward."
  (or "the return value of"), "...typechecking parameter 'x'.", "Actual value: f32[5,7,29](torch)",
  "Expected type: <class 'Float[Tensor, 'B T C']'>.", "Parameter annotations: (self, x: ...)",
  and the dims bound so far ("B=5");
- beartype ``BeartypeHintViolation`` (raised alone under a plain ``@beartype``, or as the cause of
  the above): "Method M.forward() parameter x=... violates type hint ..., as REASON", where REASON is
  jaxtyping's: "the size of dimension C is 29 which does not equal the existing value of 143",
  "the dimension size 29 does not equal the existing value of {self.n_embd}=143" (an axis tied to
  an attribute or argument), "the dimension size 4 does not equal 3 as expected by the type hint",
  "this array has 2 dimensions, not the 3 expected by the type hint", "this array has dtype
  float32, not ... as expected by the type hint", or beartype's own for other hints.

When the reason is missing (``JAXTYPING_REMOVE_TYPECHECKER_STACK``), it is worked out from the
actual shape and the dims bound so far. Nothing here imports jaxtyping, beartype or torch: an
exception of theirs can only exist once they are imported.
"""

from __future__ import annotations

import inspect
import linecache
import os
import re
import sys
from dataclasses import dataclass, field
from types import TracebackType

from ..base.diagnostics import Diagnostic
from ..base.source import display_path, innermost_user_frame
from ..naming.hints import align, variadic_positions
from .registry import diagnostic

RULE = "annotation-mismatch"

_TENSOR_HINT = re.compile(r"(\w+)\[\s*[\w.]+\s*,\s*'([^']*)'\s*\]")
_PARAM_HINT = re.compile(r"(\w+)\s*:\s*(\w+)\[\s*[\w.]+\s*,\s*'([^']*)'\s*\]")
_ACTUAL_ARRAY = re.compile(r"([a-z]+\d*)\[([\d,\s]*)\]\(\w+\)")
_JT_FUNCTION = re.compile(r"whilst checking the (parameters|return value) of (\S+?)\.?$", re.M)
_JT_ARGUMENT = re.compile(r"typechecking parameter '(\w+)'")
_JT_ACTUAL = re.compile(r"^Actual value: (.*)$", re.M)
_JT_EXPECTED = re.compile(r"^Expected type: (.*?)\.?$", re.M)
_JT_PARAMS = re.compile(r"^Parameter annotations: \((.*)\) -> ", re.M)
_JT_MEMO = re.compile(r"^(\w+)=(\d+)$", re.M)
_BT_HEAD = re.compile(r"^(?:\w+ )?([\w.<>]+)\(\) (?:parameter (\w+)=|(return) )")
_BT_REASON = re.compile(r"violates type hint (.*?), as (.*?)\.?\s*$", re.S)

_NAMED = re.compile(r"the size of dimension (\S+) is (\d+) which does not equal the existing value of (\d+)")
_SYMBOLIC = re.compile(r"the dimension size (\d+) does not equal the existing value of (.+)=(-?\d+)$")
_FIXED = re.compile(r"the dimension size (\d+) does not equal (\d+) as expected by the type hint")
_RANK = re.compile(r"this array has (\d+) dimensions, not the (\d+) expected")
_RANK_MIN = re.compile(r"this array has (\d+) dimensions, which is fewer than (\d+)")
_DTYPE = re.compile(r"this array has dtype (\S+), not .* as expected")
_ATTRIBUTE = re.compile(r"(?:self\.)?([A-Za-z_]\w*)")
#: beartype's reason for a union hint (``Optional[Float[...]]``): "... not <class ...> or <class ...>".
_UNION = re.compile(r"not <class [^>]*> or <class")

_CASTS = {"Float": ".float()", "Int": ".long()", "Integer": ".long()", "Bool": ".bool()"}


def is_annotation_violation(exc: BaseException) -> bool:
    """True for jaxtyping's TypeCheckError and beartype's type-hint violations."""
    jaxtyping = sys.modules.get("jaxtyping")
    if jaxtyping is not None and isinstance(exc, getattr(jaxtyping, "TypeCheckError", ())):
        return True
    roar = sys.modules.get("beartype.roar")
    return roar is not None and isinstance(exc, getattr(roar, "BeartypeHintViolation", ()))


def annotation_diagnostic(exc: BaseException, tb: TracebackType | None = None) -> Diagnostic | None:
    """An ``annotation-mismatch`` Diagnostic for a jaxtyping/beartype violation, else None.

    ``file``/``line`` point at the caller that passed the wrong argument (the innermost frame
    outside jaxtyping, beartype, torch and shapetrace), or, for a wrong return value or when
    no such caller exists, at the ``def`` line of the annotated function. ``tb`` defaults to
    ``exc.__traceback__``.
    """
    if not is_annotation_violation(exc):
        return None
    tb = tb if tb is not None else exc.__traceback__
    v = _read_chain(exc)
    fn = _violating_function(tb, v.function)
    if fn is not None and not v.params:
        v.params = _signature_dims(fn)
    verdict = _verdict(v)

    label = _label(fn, v.function)
    def_file, def_line = _def_site(fn)
    call_file, call_line = _call_site(tb)
    if not v.is_return and call_file is not None:
        file, line = call_file, call_line
    else:
        file, line = def_file, def_line
    data = {k: val for k, val in verdict.data.items() if val is not None}
    data["function"] = label
    data["argument"] = v.argument or "return"
    if v.annotation:
        data["annotation"] = v.annotation
    if v.shape is not None:
        data["shape"] = list(v.shape)
    if def_file is not None:
        data["def_site"] = f"{display_path(def_file)}:{def_line}"
    if call_file is not None:
        data["call_site"] = f"{display_path(call_file)}:{call_line}"
    return diagnostic(RULE, verdict.message, verdict.hint.replace("{func}", label or "the function"),
                      file=display_path(file), line=line, op=label, **data)


# Reading the exception chain ----------------------------------------------------------------


@dataclass
class _Violation:
    function: str | None = None  # dotted path: "reference_models.m06_multi_head.MultiHeadAttention.forward"
    argument: str | None = None  # None: the return value
    is_return: bool = False
    annotation: str | None = None  # "Float[Tensor, 'B T C']", or beartype's text of another hint
    kind: str | None = None  # "Float"
    dims: list[str] | None = None  # ["B", "T", "C={self.n_embd}"]
    actual: str | None = None  # "f32[5,7,29](torch)"
    shape: tuple[int, ...] | None = None
    reason: str | None = None
    params: dict[str, list[str]] = field(default_factory=dict)  # annotated parameters, in order
    memo: dict[str, int] = field(default_factory=dict)  # dims bound before the failure


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and not any(exc is s for s in seen):
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _read_chain(exc: BaseException) -> _Violation:
    v = _Violation()
    roar = sys.modules.get("beartype.roar")
    for link in _chain(exc):
        text = str(link)
        if roar is not None and isinstance(link, getattr(roar, "BeartypeHintViolation", ())):
            _read_beartype(v, text)
        else:
            _read_jaxtyping(v, text)
    if v.annotation:
        m = _TENSOR_HINT.search(v.annotation)
        if m:
            v.kind, v.dims = m.group(1), m.group(2).split()
            v.annotation = f"{m.group(1)}[Tensor, '{m.group(2)}']"
    if v.actual:
        m = _ACTUAL_ARRAY.fullmatch(v.actual.strip())
        if m:
            v.shape = tuple(int(s) for s in m.group(2).split(",") if s.strip())
    return v


def _read_jaxtyping(v: _Violation, text: str) -> None:
    if (m := _JT_FUNCTION.search(text)) and v.function is None:
        v.is_return = m.group(1) == "return value"
        v.function = m.group(2)
    if (m := _JT_ARGUMENT.search(text)) and v.argument is None and not v.is_return:
        v.argument = m.group(1)
    if (m := _JT_ACTUAL.search(text)) and v.actual is None:
        v.actual = m.group(1)
    if (m := _JT_EXPECTED.search(text)) and v.annotation is None:
        v.annotation = m.group(1)
    if (m := _JT_PARAMS.search(text)) and not v.params:
        v.params = {name: dims.split() for name, _, dims in _PARAM_HINT.findall(m.group(1))}
    marker = "are as follows."
    if marker in text and not v.memo:
        v.memo = {k: int(s) for k, s in _JT_MEMO.findall(text.split(marker, 1)[1])}


def _read_beartype(v: _Violation, text: str) -> None:
    if m := _BT_HEAD.search(text):
        if v.function is None:
            v.function = m.group(1)
            v.is_return = m.group(3) == "return"
        if m.group(2) and v.argument is None and not v.is_return:
            v.argument = m.group(2)
    if m := _BT_REASON.search(text):
        if v.annotation is None:
            v.annotation = m.group(1)
        if v.reason is None:  # the innermost violation's reason is the same text; keep the first
            v.reason = " ".join(m.group(2).split())


# The verdict --------------------------------------------------------------------------------


@dataclass
class _Verdict:
    message: str
    hint: str
    data: dict = field(default_factory=dict)


def _token_name(token: str) -> str:
    """``C={self.n_embd}`` -> ``C``; ``*batch`` -> ``batch``; ``#T`` -> ``T``."""
    name = token.split("=", 1)[0] if "=" in token else token
    return name.lstrip("*#?").rstrip("#") or token


def _pretty_dims(dims: list[str] | None) -> str:
    """The annotation's axes as a shape: ``(*batch, q, d)`` (a variadic axis keeps its star)."""
    if not dims:
        return "its annotation"
    return "(" + ", ".join(("*" if t.lstrip("#").startswith("*") else "") + _token_name(t)
                           if t != "..." else "..." for t in dims) + ")"


def _shape_text(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return ""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _verdict(v: _Violation) -> _Verdict:
    arg = v.argument or "return value"
    reason = v.reason or ""
    dims = v.dims or []
    if m := _NAMED.search(reason):
        return _dim_verdict(v, arg, m.group(1), int(m.group(2)), int(m.group(3)))
    if m := _SYMBOLIC.search(reason):
        return _symbolic_verdict(v, arg, int(m.group(1)), m.group(2), int(m.group(3)))
    if m := _FIXED.search(reason):
        got, expected = int(m.group(1)), int(m.group(2))
        name = next((_token_name(t) if "=" in t else f"axis {i}" for i, t in enumerate(dims)
                     if t.rsplit("=", 1)[-1] == str(expected)
                     and (v.shape is None or (i < len(v.shape) and v.shape[i] == got))), "an axis")
        dim = name if name.startswith(("axis", "an axis")) else f"dim {name}"
        return _Verdict(f"{arg}: {dim} is {got}, expected {expected}",
                        f"{{func}} declares {arg} as {v.annotation}, with {name} fixed to {expected}.",
                        {"dim": name, "got": got, "expected": expected})
    if (m := _RANK.search(reason)) or (m := _RANK_MIN.search(reason)):
        return _rank_verdict(v, arg, int(m.group(1)), int(m.group(2)))
    if m := _DTYPE.search(reason):
        kind = v.kind or "different"
        cast = _CASTS.get(v.kind or "", "")
        fix = f"convert it with {cast}" if cast else "convert it"
        article = "an" if kind[:1] in "AEIOU" else "a"
        return _Verdict(f"{arg}: dtype {m.group(1)}, expected {article} {kind} tensor {_pretty_dims(dims)}",
                        f"{{func}} declares {arg} as {v.annotation}; {fix} or fix the caller.",
                        {"got": m.group(1), "expected": kind})
    union = bool(_UNION.search(reason))  # Optional[Float[...]]: beartype's reason names no dim
    if (not reason or union) and v.shape is not None and dims:
        inferred = _infer_without_reason(v, arg)
        if inferred is not None:
            return inferred
    got = _describe_actual(v)
    expected = v.annotation or "its annotation"
    if m := re.fullmatch(r"<class '(.+)'>", expected):
        expected = m.group(1)
    detail = f" ({reason})" if reason and "not instance of" not in reason and not union else ""
    return _Verdict(f"{arg}: got {got}, expected {expected}{detail}",
                    f"{{func}} declares {arg} as {expected}; pass a value of that type.")


def _describe_actual(v: _Violation) -> str:
    if v.shape is not None:
        return f"a tensor of shape {_shape_text(v.shape)}"
    reason = v.reason or ""
    m = re.match(r"(\S+) .* not instance of", reason)
    if m:
        return m.group(1)
    if v.actual:
        return v.actual if len(v.actual) <= 40 else v.actual[:37] + "..."
    return "a value of another type"


def _dim_verdict(v: _Violation, arg: str, dim: str, got: int, expected: int) -> _Verdict:
    """A named dim (``C``) that an earlier axis or argument bound to another size."""
    dims = v.dims or []
    positions = [i for i, t in enumerate(dims) if _token_name(t) == dim and "=" not in t]
    set_by, hint = None, None
    for name, param_dims in v.params.items():  # the arguments are checked, and bind, in order
        if name == v.argument:
            break
        if any(_token_name(t) == dim and "=" not in t for t in param_dims):
            set_by = name
            hint = (f"{arg} and {name} must agree on {dim}: {name} is {_pretty_dims(param_dims)} "
                    f"with {dim} = {expected}, {arg} has {dim} = {got}.")
            break
    if set_by is None and v.shape is not None and len(positions) > 1:
        first = positions[0]
        if first < len(v.shape) and v.shape[first] == expected:
            set_by = f"axis {first} of {arg}"
            hint = f"{{func}} declares {arg} as {v.annotation}: its axes named {dim} must be equal."
    if v.is_return:
        source = f" (as in {set_by})" if set_by else ""
        hint = (f"{{func}} promises to return {_pretty_dims(dims)} with {dim} = {expected}{source} "
                f"but returned {_shape_text(v.shape) or f'{dim} = {got}'}: check the last reshape, "
                f"slice or projection before the return.")
    if hint is None:
        hint = f"{{func}} declares {arg} as {v.annotation}, with {dim} = {expected} in this call."
    by = f" as set by {set_by}" if set_by else ""
    return _Verdict(f"{arg}: dim {dim} is {got}, expected {expected}{by}", hint,
                    {"dim": dim, "got": got, "expected": expected, "set_by": set_by})


def _symbolic_verdict(v: _Violation, arg: str, got: int, expr: str, expected: int) -> _Verdict:
    """An axis tied to an expression: ``C={self.n_embd}``, ``d=C//{n_head}``, ``H*d``."""
    dims = v.dims or []
    name = None
    for i, token in enumerate(dims):
        lhs, eq, rhs = token.partition("=")
        if (rhs if eq else token) == expr:
            name = _token_name(lhs) if eq else f"axis {i}"
            break
    clean = expr.replace("{", "").replace("}", "")
    attribute = _ATTRIBUTE.fullmatch(clean)
    dim = f"dim {name}" if name and not name.startswith("axis") else (name or "an axis")
    if attribute:
        source = attribute.group(1)
        message = f"{arg}: {dim} is {got}, expected {expected} as set by {source}"
        if v.is_return:
            hint = (f"{{func}} promises to return {_pretty_dims(dims)} with "
                    f"{name or 'this axis'} = {source} = {expected} but returned "
                    f"{_shape_text(v.shape) or got}: check the last reshape or projection before the return.")
        elif clean.startswith("self."):
            hint = (f"{{func}} was built with {source}={expected}: pass {arg} with "
                    f"{name or 'this axis'} = {expected}, or build the module with {source}={got}.")
        else:
            hint = f"{{func}} ties {name or 'this axis'} of {arg} to its argument {source} = {expected}."
        return _Verdict(message, hint, {"dim": name, "got": got, "expected": expected, "set_by": source})
    message = f"{arg}: {dim} is {got}, expected {expected} = {clean}"
    if v.is_return:
        hint = (f"{{func}} promises to return {_pretty_dims(dims)} with {name or 'this axis'} = "
                f"{clean} = {expected} but returned {_shape_text(v.shape) or got}.")
    else:
        hint = f"{{func}} declares {arg} as {v.annotation}, with {name or 'this axis'} = {clean}."
    return _Verdict(message, hint, {"dim": name, "got": got, "expected": expected, "set_by": clean})


def _rank_verdict(v: _Violation, arg: str, got: int, expected: int) -> _Verdict:
    shape = f" {_shape_text(v.shape)}" if v.shape is not None else ""
    pretty = _pretty_dims(v.dims)
    message = f"{arg}: got {got} axes{shape}, expected {expected} {pretty}"
    if v.is_return:
        hint = f"{{func}} promises to return {pretty}: check the last reshape before the return."
    elif got < expected:
        hint = (f"{{func}} takes {arg} as {pretty}: add the missing axis (e.g. .unsqueeze(0) for "
                f"a batch of one) or fix the caller.")
    else:
        hint = f"{{func}} takes {arg} as {pretty}: remove the extra axis or fix the caller."
    return _Verdict(message, hint, {"got": got, "expected": expected})


def _infer_without_reason(v: _Violation, arg: str) -> _Verdict | None:
    """The reason text was dropped: compare the actual shape with the dims bound so far."""
    dims, shape = v.dims or [], v.shape or ()
    if not variadic_positions(dims) and len(dims) != len(shape):
        return _rank_verdict(v, arg, len(shape), len(dims))
    pairs = align(dims, shape)
    if pairs is None:  # two variadic tokens, or fewer axes than the fixed ones
        return None
    for token, size in pairs:
        name = _token_name(token)
        if token.startswith("#") and size == 1:
            continue  # broadcastable
        if "=" not in token and name in v.memo and v.memo[name] != size:
            return _dim_verdict(v, arg, name, size, v.memo[name])
    return None


# Where it happened --------------------------------------------------------------------------


def _label(fn, dotted: str | None) -> str | None:
    """``MultiHeadAttention.forward``: the qualified name, without the module."""
    if fn is not None:
        qualname = getattr(inspect.unwrap(fn), "__qualname__", None)
        if qualname:
            return qualname.replace(".<locals>", "")
    if not dotted:
        return None
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in sys.modules:
            return ".".join(parts[cut:])
    return ".".join(parts[-2:])


def _violating_function(tb: TracebackType | None, dotted: str | None):
    """The annotated function: from jaxtyping's wrapper frame, else by its dotted name."""
    jaxtyping = sys.modules.get("jaxtyping")
    root = os.path.dirname(jaxtyping.__file__) if jaxtyping is not None and jaxtyping.__file__ else None
    found = None
    while tb is not None:
        frame = tb.tb_frame
        if root and frame.f_code.co_filename.startswith(root):
            candidate = frame.f_locals.get("fn")
            if callable(candidate):
                found = candidate
        tb = tb.tb_next
    if found is not None:
        return found
    return _resolve(dotted)


def _resolve(dotted: str | None):
    if not dotted:
        return None
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        obj = module
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj if callable(obj) else None
    return None


def _signature_dims(fn) -> dict[str, list[str]]:
    try:
        params = inspect.signature(inspect.unwrap(fn)).parameters.values()
    except (TypeError, ValueError):
        return {}
    out = {}
    for p in params:
        m = _TENSOR_HINT.search(str(p.annotation))
        if m:
            out[p.name] = m.group(2).split()
    return out


def _def_site(fn) -> tuple[str | None, int | None]:
    """The file and the line of the ``def`` (not of its first decorator)."""
    if fn is None:
        return None, None
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return None, None
    path, first = code.co_filename, code.co_firstlineno
    for line in range(first, first + 50):
        text = linecache.getline(path, line).lstrip()
        if not text:
            break
        if text.startswith(("def ", "async def ")):
            return path, line
    return path, first


def _call_site(tb: TracebackType | None) -> tuple[str | None, int | None]:
    """The innermost frame in user code: outside the libraries, shapetrace and the stdlib."""
    return innermost_user_frame(tb, installed_is_library=True) or (None, None)
