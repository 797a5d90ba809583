"""Whether a module is meant to be causal, and the evidence (SPEC section 3).

Intent must survive the bug it is there to catch: forgetting the mask removes the mask, so a
mask cannot be the only evidence. It is taken, strongest first, from

1. a declaration (``--causal`` / ``--no-causal``, ``causal = true``, ``check(causal=...)``);
2. a ``causal`` / ``is_causal`` / ``autoregressive`` constructor argument or attribute of the
   checked module (``False`` there means the module says it is not causal: neither the trace
   nor names are read, since a prefix-LM's mask, a triangle widened by its prefix, looks
   causal and is not); a true one only when the user gave it, a class body sets it, the
   module's code reads it, or the module holds a triangular buffer (a default stored and never
   read decides nothing the module does);
3. the trace: a triangular mask (``tril``/``triu``, a square buffer sliced to (T, T), an outer
   comparison of positions), ``is_causal=True``, or a running sum over T of feature vectors
   (``torch.cumsum(k * v, dim=1)``: causal linear attention, causal by construction);
4. a class name that says so unambiguously, of the module or of a submodule: a word
   ``Causal``, a name starting with ``GPT`` (or a word ``GPT``: ``NanoGPT``), ``AutoRegressive``;
5. ``causal`` / ``is_causal`` / ``autoregressive`` attributes of submodules that are all true
   (Hugging Face's ``GPT2Attention.is_causal``); a model whose submodules disagree (an
   encoder-decoder: ``BartAttention.is_causal`` is False in the encoder) gets no intent from them,
   nor from the decoder's triangular mask in the trace (steps 3-4 are not taken for it).

"Decoder" alone is not evidence (FastPitch's, DETR's and a VAE's decoders are bidirectional):
it is named in the note that says causal-leak was not checked.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..analysis.code import parsed
from ..base.compat import held_tensors
from ..base.names import CAUSAL_FLAGS as _FLAGS
from ..base.names import causal_name, suggests_causal
from ..base.ops import COMPARISONS, EQUALITIES, NEGATIONS, RANDOM_FACTORIES, SDPA, TRIANGULAR

_CUMULATIVE = frozenset({"torch.cumsum", "Tensor.cumsum", "Tensor.cumsum_", "torch.logcumsumexp",
                         "Tensor.logcumsumexp"})


@dataclass(frozen=True)
class Intent:
    """``causal``: True (meant to be causal), False (declared not causal) or None (unknown).
    ``evidence`` says where it came from; ``suggestion`` names a class whose name hints at a
    causal model without proving it (used by the note when ``causal`` is None)."""

    causal: bool | None
    evidence: str = ""
    suggestion: str = ""


def causal_intent(model: Any = None, trace: Any = None, *, declared: bool | None = None,
                  init: Mapping[str, Any] | None = None, given=frozenset()) -> Intent:
    """Decide whether ``model`` is meant to be causal from a declaration, its constructor
    arguments (``init``, the keyword arguments it was built with; ``given``: those the user
    gave), its attributes, the records of ``trace`` (a ``TraceData`` or an ``Analysis``) and its
    class names."""
    if declared is not None:
        return Intent(bool(declared), "declared")
    modules = list(_modules(model))
    root = modules[0][1] if modules else None
    own = _flag(init or {}) if init else None
    if own is None and root is not None:
        own = _flag(_attributes(root))
    if own is True and root is not None and not _FLAGS & {k.lstrip("_").lower() for k in given} \
            and not _class_says(type(root)) and not _flag_read(type(root)) \
            and not _holds_triangle(root):
        # a flag stored and never read (``self.causal = causal``) decides nothing the module
        # does: a bidirectional model's leftover default is no intent, unless the module also
        # holds a triangular mask (built for a forward that forgot it)
        own = None
    if own is True:
        return Intent(True, f"{_class(root)} has a true causal flag")
    mixed = _mixed_flags(modules[1:])
    if own is None and mixed:
        # an encoder-decoder: the decoder's triangular mask is not the whole model's intent
        return Intent(None, mixed)
    if own is False:
        # the module says it is not causal: a prefix-LM's mask (a triangle widened by the
        # prefix) or a bidirectional window in the trace does not overrule it
        return Intent(None, f"{_class(root)} says it is not causal")
    if trace is not None:
        found = trace_evidence(trace) or _triangle_held_and_read(modules, trace)
        if found:
            return Intent(True, found)
    for path, sub in modules:
        if causal_name(_class(sub)):
            return Intent(True, f"the class name {_class(sub)}")
    flags = [_flag(_attributes(sub)) for _, sub in modules[1:]]
    if any(f is True for f in flags) and not any(f is False for f in flags):
        return Intent(True, "its attention modules have is_causal=True")
    suggestion = next((_class(sub) for _, sub in modules if suggests_causal(_class(sub))), "")
    return Intent(None, "", suggestion)


def _flag_read(cls: type) -> bool:
    """Whether the code of ``cls`` (its classes of the user's own) reads a causal flag (an
    attribute of that name read in any method, or the constructor's argument used otherwise
    than stored as it is: ``self.causal = causal``) or sets one to the constant True. True
    where the source cannot be read, or a config object holds the flag."""
    trees = [parsed(k) for k in cls.__mro__ if k.__module__ and not k.__module__.startswith(
        ("torch.", "builtins"))]
    if not trees or any(t is None for t in trees):
        return True
    for tree in trees:
        stored = set()  # ``self.X = flag``: the value stored as it is, not a use
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                stored.add(id(node.value))
            if isinstance(node, ast.Assign) and _sets_true(node):
                return True  # ``self.is_causal = True``: the author's own declaration
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else \
                node.id if isinstance(node, ast.Name) and id(node) not in stored else None
            if name and name.lstrip("_").lower() in _FLAGS \
                    and isinstance(node.ctx, ast.Load):
                return True
            if isinstance(node, ast.Attribute) and node.attr in ("config", "cfg", "args"):
                return True
    return False


def _sets_true(node: ast.Assign) -> bool:
    """Whether an assignment sets a causal flag to the constant True (also one of a tuple's)."""
    pairs = [(t, node.value) for t in node.targets]
    pairs += [(a, b) for t in node.targets if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
              for a, b in zip(t.elts, node.value.elts)]
    return any(isinstance(t, ast.Attribute) and t.attr.lstrip("_").lower() in _FLAGS
               and isinstance(v, ast.Constant) and v.value is True for t, v in pairs)


def _class_says(cls: type) -> bool:
    """Whether a class body of ``cls`` (of the user's own) declares it causal (``causal =
    True``, ``is_causal = True`` as a class attribute): a declaration, read or not."""
    return any(isinstance(k, str) and k.lstrip("_").lower() in _FLAGS and v is True
               for klass in cls.__mro__ if not klass.__module__.startswith("torch")
               for k, v in vars(klass).items())


def _holds_triangle(module) -> bool:
    """Whether a buffer of the module is a square lower or upper triangle (``tril``)."""
    return any(_triangle(buffer) for buffer in module.buffers(recurse=False))


def _triangle_held_and_read(modules, trace) -> str:
    """A square triangle a module holds (a buffer, or a tensor kept as a plain attribute:
    ``self.mask = torch.triu(...) == 0``, built in the constructor where the trace does not
    see it) that an op of the trace reads, as words; or ""."""
    read = {(tuple(m.shape), m.dtype) for rec in trace.records for m in rec.inputs
            if m._made_by is None and len(m.shape) >= 2 and m.shape[-1] == m.shape[-2]}
    if not read:
        return ""
    for _, module in modules:
        for _, t in held_tensors(module):
            if (tuple(t.shape), t.dtype) in read and _triangle(t):
                return f"a triangular mask {_class(module)} holds and its forward reads"
    return ""


def _triangle(t) -> bool:
    """Whether ``t`` is a square lower or upper triangle of two values or more (a mask made
    with ``tril``/``triu``, 0/1, True/False or 0/-inf), not a learned weight."""
    import torch

    if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.shape[-1] != t.shape[-2] \
            or t.shape[-1] < 2 or t.is_meta or t.is_complex() or t.requires_grad:
        return False
    square = t.detach().reshape(-1, *t.shape[-2:])[0].float()
    finite = square.nan_to_num(0.0, posinf=1.0, neginf=-1.0)  # 0/-inf masks as 0/-1
    if bool(square.isnan().any()) or bool((finite == finite[0, 0]).all()):
        return False
    return torch.equal(finite, finite.tril()) or torch.equal(finite, finite.triu())


def _mixed_flags(modules) -> str:
    """The reason, when some submodules say they are causal and others say they are not (an
    encoder-decoder: Bart's decoder self-attention against its encoder and cross-attention)."""
    said = {True: "", False: ""}
    for path, sub in modules:
        flag = _flag(_attributes(sub))
        if flag is not None and not said[flag]:
            said[flag] = path or _class(sub)
    if not (said[True] and said[False]):
        return ""
    return (f"its submodules disagree ({said[True]} says it is causal, {said[False]} says it is "
            f"not: an encoder-decoder), so the whole module is not held to causality")


def _class(obj: Any) -> str:
    return type(obj).__name__


def _modules(model: Any):
    if model is None:
        return
    named = getattr(model, "named_modules", None)
    if named is None:
        return
    try:
        yield from named()
    except Exception:  # noqa: BLE001 - a module tree that cannot be walked gives no evidence
        return


def _attributes(module) -> dict:
    """A module's attributes, with the true/false flags its classes set (``causal = True`` in
    the class body) under the instance's own."""
    attrs: dict = {}
    for klass in reversed(type(module).__mro__):
        if klass.__module__.startswith("torch.") or klass is object:
            continue
        attrs.update((k, v) for k, v in vars(klass).items() if isinstance(v, bool))
    attrs.update(vars(module))
    return attrs


def _flag(attrs: Mapping[str, Any]) -> bool | None:
    """True / False from a causal flag among ``attrs`` (or a config object among them), else None."""
    found = None
    for key, value in attrs.items():
        if not isinstance(key, str):
            continue
        name = key.lstrip("_").lower()
        if name in _FLAGS and isinstance(value, bool):
            if value:
                return True
            found = False
        elif name in ("config", "cfg", "args") and not isinstance(value, (bool, int, float, str)):
            inner = _config_flag(value)
            if inner is True:
                return True
            if inner is False:
                found = False
    return found


def _config_flag(value: Any) -> bool | None:
    try:
        attrs = vars(value) if not isinstance(value, Mapping) else value
    except TypeError:
        return None
    if not isinstance(attrs, Mapping):
        return None
    found = None
    for key, item in attrs.items():
        if isinstance(key, str) and key.lstrip("_").lower() in _FLAGS and isinstance(item, bool):
            if item:
                return True
            found = False
    return found


def init_arguments(cls: type, given: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor's keyword arguments: those given, then the signature's defaults."""
    out = dict(given)
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return out
    for p in params:
        if p.name not in out and p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
    return out


def _only_compared(records, rec) -> bool:
    """Whether the triangle ``rec`` library code made is only compared with something (torch's
    encoder testing whether the mask it was given is causal, ``mask == triu(...)``): a test of a
    mask, not a mask."""
    if not rec.internal:
        return False
    users = [r for r in records[rec.index + 1:] if any(m._made_by == rec.index for m in r.inputs)]
    return bool(users) and all(r.op in COMPARISONS | EQUALITIES or r.op == "torch.equal" for r in users)


def trace_evidence(trace: Any) -> str:
    """The first sign in the trace that the module is built to be causal, as words, or ""."""
    dims = trace.dims
    T = dims.get("T")  # None at the user's own sizes when nothing names T
    data = _DataLineage(trace.records)
    reshaped = _pattern_writes(trace.records)
    for rec in trace.records:
        op = rec.op
        if op in TRIANGULAR and (rec.index, 0) not in reshaped and not _only_compared(trace.records, rec):
            return f"a triangular mask ({op})"
        if rec.kwargs.get("is_causal") is True or (op == SDPA
                                                   and len(rec.args) > 5 and rec.args[5] is True):
            return "is_causal=True"
        if op == "[]" and rec.inputs and rec.outputs:
            src, out = rec.inputs[0].shape, rec.outputs[0].shape
            held = rec.inputs[0]._made_by is None  # kept from before the forward (a buffer)
            if held and len(src) >= 2 and src[-1] == src[-2] != T and out[-2:] == (T, T) \
                    and dims.get("B") not in src[:-2] \
                    and str(rec.inputs[0].dtype) not in _INDICES:  # not scores padded and cut
                # back, a bias computed in the forward, nor a table of distances or row
                # numbers (a relative-position index)
                return "a square mask sliced to (T, T)"
        if op in COMPARISONS and len(rec.inputs) == 2 and rec.outputs:
            a, b = rec.inputs[0].shape, rec.inputs[1].shape
            out = rec.outputs[0].shape
            if len(out) >= 2 and out[-1] == out[-2] and a != b \
                    and out[-1] in (T, dims.get("L")) and not any(data.carries(m) for m in rec.inputs) \
                    and not _widened(trace.records, rec):
                return "a comparison of positions (a causal mask)"
        if op in _CUMULATIVE and _running_sum_over_time(rec, T):
            return f"a running sum over T ({op}): causal by construction"
    return ""


#: dtypes of indices and distances, never of a mask (bool, 0/1 bytes, 0/-inf floats)
_INDICES = frozenset({"torch.int64", "torch.int32", "torch.int16"})

_ORS = frozenset({"|", "torch.logical_or", "Tensor.logical_or", "torch.bitwise_or",
                  "Tensor.bitwise_or"})
_ANDS = frozenset({"&", "torch.logical_and", "Tensor.logical_and", "torch.bitwise_and",
                   "Tensor.bitwise_and"})
_LESS = frozenset({"<", "<=", "torch.lt", "torch.le", "Tensor.lt", "Tensor.le"})


def _sees(rec) -> bool | None:
    """For a comparison of a query position ``i`` (an axis ``(..., N, 1)``) with a key position
    ``j`` (``(..., 1, N)`` or ``(N,)``): True when it is true where the query may look (``j <=
    i``, ``i >= j``), False when it is true where it may not (``j > i``); None for anything
    else."""
    def role(shape):
        if len(shape) >= 2 and shape[-1] == 1 and shape[-2] > 1:
            return "i"
        if len(shape) == 1 or (len(shape) >= 2 and shape[-2] == 1 and shape[-1] > 1):
            return "j"
        return None

    first, second = (role(m.shape) for m in rec.inputs[:2])
    if {first, second} != {"i", "j"}:
        return None
    less = rec.op in _LESS
    return less if first == "j" else not less


def _widened(records, rec, hops: int = 4) -> bool:
    """Whether the positions a comparison lets a query see are widened on purpose before the
    mask is used: ``(j <= i) | (j < prefix)``, a prefix-LM whose prefix is read both ways. Such a
    comparison is no sign of a causal module. A mask of hidden positions OR'ed with padding, or
    a visible one AND'ed with it, still is."""
    sees = _sees(rec)
    if sees is None:
        return False
    frontier = [((rec.index, 0), sees)]
    for _ in range(hops):
        following = []
        for src, sees in frontier:
            for later in records[src[0] + 1:]:
                if not any(m.src == src for m in later.inputs):
                    continue
                if sees and later.op in _ORS:
                    return True
                if later.op in NEGATIONS:
                    following.append(((later.index, 0), not sees))
                elif later.op in _ORS or later.op in _ANDS or later.op == "[]":
                    following.append(((later.index, 0), sees))
        frontier = following
    return False


def _pattern_writes(records) -> set:
    """The tensors (``(record, slot)``) whose pattern a later write changes: ``mask[:3, :3] =
    True`` on a ``tril`` makes a prefix-LM mask, no longer a causal one. A write indexed by the
    tensor itself (``mask[mask == 0] = float('-inf')``) only recodes its values and keeps it."""
    found = set()
    for rec in records:
        if rec.op != "[]=" or not rec.inputs or rec.inputs[0].src is None:
            continue
        target = rec.inputs[0].src
        if not any(_derives_from(records, m, target) for m in rec.inputs[1:]):
            found.add(target)
    return found


def _derives_from(records, meta, target, budget: int = 64) -> bool:
    stack, seen = [meta], set()
    while stack and budget > 0:
        budget -= 1
        m = stack.pop()
        if m.src is None or m.src in seen:
            continue
        if m.src == target:
            return True
        seen.add(m.src)
        stack.extend(records[m.src[0]].inputs)
    return False


class _DataLineage:
    """Which tensors carry the module's data: computed from a floating-point tensor that came
    from outside the trace (an input, a weight) or from a random draw. Positions (aranges, an
    integer buffer, lengths) carry none: comparing them builds a mask; comparing scores with a
    threshold (top-k attention) selects by value and says nothing about causality."""

    def __init__(self, records):
        self._records = records
        self._data: list[bool] | None = None

    def carries(self, meta) -> bool:
        if meta.src is None:
            return _floating(meta)
        if self._data is None:
            data: list[bool] = []
            for rec in self._records:  # producers come before their consumers
                data.append(rec.op in RANDOM_FACTORIES or any(
                    _floating(m) if m.src is None else data[m.src[0]] for m in rec.inputs))
            self._data = data
        return self._data[meta.src[0]]


def _floating(meta) -> bool:
    return bool(getattr(meta.dtype, "is_floating_point", False))


def _running_sum_over_time(rec: Any, T: int) -> bool:
    """``torch.cumsum(k * v, dim=1)`` on (B, T, H, d, d): a floating tensor with exactly one
    axis of size T, summed along it, with a feature axis besides (not lengths nor positions)."""
    if not rec.inputs:
        return False
    meta = rec.inputs[0]
    shape = meta.shape
    if not getattr(meta.dtype, "is_floating_point", False) or len(shape) < 3:
        return False
    if sum(1 for s in shape if s == T) != 1:
        return False
    dim = rec.arg(1, "dim")
    if not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
        return False
    return shape[dim] == T


def unchecked_note(root: str, intent: Intent, *, causal_in_practice: bool = False) -> str:
    """The one info line that says causal-leak was not checked, and how to declare intent."""
    why = intent.evidence or (f"nothing shows that {root} is meant to be causal (no triangular "
                              f"mask, no is_causal=True, no causal flag or class name)")
    text = f"causal-leak not checked: {why}"
    if intent.suggestion:
        text += (f"; the class name {intent.suggestion} suggests it may be, but such names are "
                 f"used by bidirectional models too")
    if causal_in_practice:
        text += "; the module is causal in practice (no output position depends on a later one)"
    return (text + ". If it is meant to be causal, declare it: --causal, causal = true in "
            "[tool.shapetrace], or check(..., causal=True)")
