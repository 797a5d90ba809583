"""Behaviour checks: run a module again to see whether it cheats, mixes samples, or is random.

Some bugs leave every shape right and every op plausible: a mask that is never applied, a fill
value of -1e-9, a norm over the time axis, an inverted SDPA mask, a softmax over the batch,
``nn.MultiheadAttention`` fed (B, T, C) without ``batch_first=True``, positions indexed by the
batch axis, ``F.dropout`` left on in eval. They show only in what the output depends on, so this
module re-runs a float64 copy of the module (the user's module is never touched) and asks:

- ``batch-leak``: does a sample's output depend on another sample, or change when the sample
  moves to another place in the batch?
- ``causal-leak`` (when the module is meant to be causal): does output position t depend on a
  later position of the query stream? A second stream (cross-attention context) may be seen whole.
- ``nondeterministic-eval``: do two runs in eval mode, same inputs, give different outputs?

Public API
----------
``InputRole(name="x", batch=0, time=1, stream="query", tokens=False)``
    What each positional input is: its batch axis, its time axis (or None), whether it is the
    query stream (time-aligned with the output) or a ``"context"`` stream (axis S, not
    time-aligned), and whether it holds integer tokens. ``InputRole.from_axes("x", "B T C")``
    builds one from dimension names; ``infer_roles(inputs, dims)`` guesses all of them by size.

``dependencies(module, inputs, roles=None, *, dims=None, kwargs=None, rtol=RTOL, batched=None)``
    Returns a ``DependencyResult``: which output (sample, position) depends on which input
    (sample, position). One autograd forward in float64, eval mode, then B + T
    vector-Jacobian products. Token inputs are followed from the outputs of the
    ``nn.Embedding`` modules that read them (position tables indexed by ``arange`` are not
    inputs), else by changing one token at a time. Every floating tensor output with an axis
    of size B counts (tuples, dicts and Hugging Face outputs by field name).
    ``DependencyResult.batch_grid`` (B x B) and ``.time_grid`` (T x T, query stream only) are
    boolean matrices (output row, input column); ``.reason`` says why they are missing (B
    equal to T, no output with a batch axis).

``looks_causal(dep) -> bool``
    True when no output position depends on a later input position and some depends on an
    earlier one: the module is causal in practice.

``run_behaviour(module, inputs, roles=None, *, causal, dims=None, kwargs=None) -> BehaviourResult``
    All three checks: ``.diagnostics``, ``.dependency``, ``.notes`` (e.g. "causal in practice")
    and ``.skipped`` (why a check could not run). ``check_behaviour(...)`` returns only the
    diagnostics. A module that raises while re-running gives no diagnostics (the trace reports
    the failure) and one ``skipped`` line.

``grid_text(data) -> str``
    The dependency grid of a diagnostic's ``data`` as plain text (``■`` used, ``·`` unused,
    ``✗`` leak), for terminal renderers.

Diagnostic data
---------------
``causal-leak`` and ``batch-leak`` carry ``data["grid"]``::

    {"rows": ["0", "1", ...], "cols": [...], "row_axis": "output position (T)",
     "col_axis": "input position (T)", "expected": "lower" | "diagonal",
     "cells": [[0 | 1 | 2, ...], ...]}     # 0 unused, 1 used and allowed, 2 used but forbidden

plus ``data["leaks"]`` (how many forbidden cells are used), ``data["grid_text"]`` (the grid
as ``grid_text`` draws it, where a cell leaks) and, for ``batch-leak``, ``data["kind"]``:
``"mixing"`` (another sample is read) or ``"position"`` (the output changes with the sample's
place in the batch; then ``data["max_change"]``, the largest relative change).
``nondeterministic-eval`` carries ``data["max_change"]``, the largest absolute difference.

How a dependency is decided
---------------------------
Output elements are grouped into rows twice: by sample (B rows, for the B x B grid) and by
their latest time coordinate (T rows, for the T x T grid). Each row gets one backward pass
with a random cotangent on the row's elements, so the gradient is non-zero wherever any
element of the row depends on an input element (a cancellation has probability zero). That is
B + T backward passes, batched with vmap when autograd's batching is already loaded.
Gradients are summed in absolute value over the other input axes. A dependency counts when it
exceeds ``RTOL`` times the largest one for that (output, input) pair. ``RTOL = 1e-6``: in
float64, couplings that are zero in exact arithmetic come out at 1e-16 relative at most, and a
masked score contributes exactly 0 (``exp(-1e4)`` and ``exp(finfo.min)`` underflow to 0.0),
while real couplings through a softmax over O(1) scores are 1e-3 or more. A fill of -1e-9
leaves the future weights near 1/T, far above the threshold; the threshold sits at a fill
about 14 below the row's largest score.

Locating a leak
---------------
A small ``TorchFunctionMode`` records every op at the level the user wrote it (inside the
mode's handler the mode is off, so nested calls are not seen), with the user's source site.
For a dependency leak the ops' outputs are differentiated in order and the first one that
leaks is named: an axis of size B is the batch axis, axes of size T are time axes, and an
element at time coordinates (t1, t2, ...) may depend on input positions up to max(t1, t2, ...)
(so (B, H, T, T) scores are legal before masking); an output with no time axis that depends on
more than one position leaks. For position-in-batch and nondeterminism leaks the module runs
twice (rolled batch / same inputs) and the first op whose outputs disagree is named.

Cost
----
A correct module costs four forwards (two for determinism, one on the rolled batch, one with
gradients) and B + T backward passes, on one thread (probe-size tensors are too small to gain
from more, and stall when the cores are busy): about 40 ms of CPU time for a multi-head
attention at the default probe sizes (``benchmarks/behaviour_cost.py``). A leak adds one or
two recorded forwards and a backward per op up to the leaking one. ``torch.func.vmap`` is not
used: its first call in a process imports torch._dynamo (about 1 s).
"""

from __future__ import annotations

import ast
import copy
import math
import re
import sys
import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ._dims import Dims
from ._report import Diagnostic
from ._source import display_path
from ._source import resolve_site, source_segment, user_site

__all__ = [
    "RTOL",
    "InputRole",
    "Dependency",
    "DependencyResult",
    "BehaviourResult",
    "infer_roles",
    "dependencies",
    "looks_causal",
    "run_behaviour",
    "check_behaviour",
    "grid_text",
]

#: A dependency counts when it exceeds RTOL times the largest one (float64; see module docs).
RTOL = 1e-6
#: Outputs of a permuted batch must match the permuted outputs to this relative tolerance.
PERMUTATION_RTOL = 1e-6

UNUSED, USED, LEAK = 0, 1, 2
_SYMBOLS = {UNUSED: "·", USED: "■", LEAK: "✗"}


# ---------------------------------------------------------------------------------------------
# Roles of the inputs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputRole:
    """What one positional input of the module is.

    ``batch`` and ``time`` are axis indices (or None). ``stream`` is ``"query"`` for the
    stream that is time-aligned with the output, ``"context"`` for a second sequence
    (cross-attention source, axis S) that the causal check does not constrain. ``tokens``
    marks integer token ids: their dependencies are taken from the embedding outputs.
    """

    name: str = "x"
    batch: int | None = 0
    time: int | None = 1
    stream: str = "query"
    tokens: bool = False

    def __post_init__(self):
        if self.stream not in ("query", "context"):
            raise ValueError(f"stream must be 'query' or 'context', got {self.stream!r}")

    @classmethod
    def from_axes(cls, name: str, axes: str | Sequence[str], *, tokens: bool = False) -> InputRole:
        """``InputRole.from_axes("context", "B S C")``: roles from dimension names."""
        names = axes.replace(",", " ").split() if isinstance(axes, str) else list(axes)
        batch = names.index("B") if "B" in names else None
        if "T" in names:
            return cls(name, batch, names.index("T"), "query", tokens)
        if "S" in names:
            return cls(name, batch, names.index("S"), "context", tokens)
        return cls(name, batch, None, "query", tokens)

    @property
    def is_constant(self) -> bool:
        """Neither a batch nor a time axis: held fixed (a shared mask, a scalar)."""
        return self.batch is None and self.time is None


def infer_roles(inputs: Sequence[Any], dims: Dims | None = None,
                names: Sequence[str] | None = None) -> list[InputRole | None]:
    """Guess each input's role from its sizes: the axis of size B is the batch axis, an axis of
    size T the time axis (query stream), else an axis of size S (context stream). Integer
    tensors with a batch and a time axis are tokens; a tensor without a batch axis is shared
    by all samples and held fixed. Non-tensors get None."""
    dims = dims or Dims()
    roles: list[InputRole | None] = []
    for i, value in enumerate(inputs):
        if not isinstance(value, Tensor):
            roles.append(None)
            continue
        shape = list(value.shape)
        batch = shape.index(dims["B"]) if dims["B"] in shape else None
        if batch is None:  # shared by every sample (a (T, T) mask, a table): held fixed
            roles.append(InputRole(names[i] if names and i < len(names) else f"input {i}", None, None))
            continue
        rest = [j for j in range(len(shape)) if j != batch]
        time = next((j for j in rest if shape[j] == dims["T"]), None)
        stream = "query"
        if time is None:
            time = next((j for j in rest if shape[j] == dims["S"]), None)
            stream = "context" if time is not None else "query"
        tokens = (not value.is_floating_point() and value.dtype != torch.bool
                  and not value.is_complex() and batch is not None and time is not None)
        default = ("idx" if tokens else "x") if i == 0 else f"input {i}"
        name = names[i] if names and i < len(names) else default
        roles.append(InputRole(name, batch, time, stream, tokens))
    return roles


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass
class Dependency:
    """How one output depends on one source (an input, or the embedding of a token input).

    ``batch_strength`` is (B_out, B_in): how strongly output sample b reads input sample b'.
    ``time_strength`` is (T_out, T_in): how strongly the output elements whose latest time
    coordinate is t read input position t' (None when the output or the source has no time
    axis). Each is normalised to a maximum of 1; a dependency counts above ``rtol``.
    """

    output: str
    source: str
    stream: str
    batch_strength: Tensor | None
    time_strength: Tensor | None
    rtol: float = RTOL

    @property
    def batch(self) -> Tensor | None:
        """(B_out, B_in) booleans, or None when the source has no batch axis."""
        return None if self.batch_strength is None else self.batch_strength > self.rtol

    @property
    def time(self) -> Tensor | None:
        """(T_out, T_in) booleans for a time-aligned (query) source, else None."""
        if self.time_strength is None or self.stream != "query":
            return None
        return self.time_strength > self.rtol


@dataclass
class DependencyResult:
    """Which output (sample, position) depends on which input (sample, position)."""

    B: int
    T: int
    pairs: list[Dependency] = field(default_factory=list)
    #: Why the dependencies could not be worked out (then ``pairs`` is empty).
    reason: str | None = None

    @property
    def batch_grid(self) -> Tensor | None:
        """(B, B) booleans over every output and source: output sample row, input sample column."""
        grids = [p.batch for p in self.pairs if p.batch is not None and p.batch.shape == (self.B, self.B)]
        return _any(grids)

    @property
    def time_grid(self) -> Tensor | None:
        """(T, T) booleans over the time-aligned sources: output position row, input column."""
        grids = [p.time for p in self.pairs if p.time is not None and p.time.shape == (self.T, self.T)]
        return _any(grids)

    def batch_leaks(self) -> list[tuple[int, int]]:
        """(output sample, input sample) pairs across samples that are used."""
        grid = self.batch_grid
        if grid is None:
            return []
        off = grid & ~torch.eye(grid.shape[0], grid.shape[1], dtype=torch.bool)
        return [tuple(ix) for ix in off.nonzero().tolist()]

    def causal_leaks(self) -> list[tuple[int, int]]:
        """(output position, later input position) pairs that are used."""
        grid = self.time_grid
        if grid is None:
            return []
        future = torch.ones_like(grid).triu(1)
        return [tuple(ix) for ix in (grid & future).nonzero().tolist()]


def _any(grids: list[Tensor]) -> Tensor | None:
    if not grids:
        return None
    out = grids[0].clone()
    for g in grids[1:]:
        out |= g
    return out


def looks_causal(dep: DependencyResult) -> bool:
    """True when the time-aligned dependencies are lower triangular and some output position
    depends on an earlier one (a position-wise module is not "causal in practice")."""
    grid = dep.time_grid
    if grid is None or grid.shape[0] < 2:
        return False
    return not bool(grid.triu(1).any()) and bool(grid.tril(-1).any())


@dataclass
class BehaviourResult:
    """Everything the behaviour checks found for one module."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    dependency: DependencyResult | None = None
    #: Observations that are not findings, e.g. "the module is causal in practice".
    notes: list[str] = field(default_factory=list)
    #: Checks that could not run, and why.
    skipped: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Axes of outputs, by size
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Axes:
    batch: int | None
    time: tuple[int, ...]
    batch_merged: bool  # an axis such as B*H or B*T: samples are there but not separable
    time_merged: bool


def _axes(shape: Sequence[int], dims: Dims) -> _Axes:
    B, T = dims["B"], dims["T"]
    batch = next((i for i, s in enumerate(shape) if s == B), None)
    time = tuple(i for i, s in enumerate(shape) if s == T and i != batch)
    batch_merged = time_merged = False
    for i, s in enumerate(shape):
        if s in (B, T, 1) or i == batch or i in time:
            continue
        factors = dims.label(s).split("*")
        batch_merged |= "B" in factors
        time_merged |= "T" in factors
    return _Axes(batch, time, batch_merged, time_merged)


def _group_index(shape: Sequence[int], ax: _Axes, kind: str, B: int, T: int) -> tuple[Tensor, int]:
    """The row of each element and the number of rows: its sample (``kind="batch"``) or its
    latest time coordinate (``kind="time"``); one row when the output has no such axis."""
    n = len(shape)

    def along(axis: int, size: int) -> Tensor:
        view = [1] * n
        view[axis] = size
        return torch.arange(size).view(view)

    if kind == "batch" and ax.batch is not None:
        return along(ax.batch, B).expand(*shape), B
    if kind == "time" and ax.time:
        latest = along(ax.time[0], T)
        for axis in ax.time[1:]:
            latest = torch.maximum(latest, along(axis, T))
        return latest.expand(*shape), T
    return torch.zeros(tuple(shape), dtype=torch.long), 1


def _cotangents(shape: Sequence[int], ax: _Axes, kind: str, B: int, T: int, gen: torch.Generator,
                dtype: torch.dtype) -> Tensor:
    """(rows, *shape): row r holds random values on the elements of row r, zeros elsewhere."""
    index, n_rows = _group_index(shape, ax, kind, B, T)
    rows = torch.arange(n_rows).view(-1, *([1] * len(shape)))
    noise = torch.randn(tuple(shape), generator=gen, dtype=dtype)
    return (index.unsqueeze(0) == rows).to(dtype) * noise


def _reduce(grad: Tensor, batch: int | None, time: int | None) -> Tensor:
    """(rows, *source shape) -> (rows, B_in | 1, T_in | 1): |grad| summed over the other axes."""
    g = grad.abs().nan_to_num(0.0, 0.0, 0.0)
    keep = [a + 1 for a in (batch, time) if a is not None]
    others = [a for a in range(1, g.dim()) if a not in keep]
    g = g.permute(0, *keep, *others)
    if others:
        g = g.flatten(1 + len(keep)).sum(-1)
    if batch is None:
        g = g.unsqueeze(1)
    if time is None:
        g = g.unsqueeze(2)
    return g


# ---------------------------------------------------------------------------------------------
# Op capture (for locating a leak)
# ---------------------------------------------------------------------------------------------


@dataclass
class _Op:
    func: Any
    name: str
    site: Any
    module: str
    outputs: list[Tensor]  # snapshots (clones) of the outputs, in the graph when grads are on
    originals: list[Tensor]
    args: tuple
    kwargs: dict
    input_ids: frozenset[int]


_METHOD_PREFIXES = {"TensorBase": "Tensor", "_TensorBase": "Tensor", "Tensor": "Tensor"}


def _op_name(func) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    if name == "__get__":  # a property such as Tensor.T
        owner = getattr(func, "__self__", None)
        return f"Tensor.{getattr(owner, '__name__', 'attribute')}"
    qual = getattr(func, "__qualname__", "") or ""
    head = qual.split(".")[0]
    if head in _METHOD_PREFIXES and "." in qual:
        return f"Tensor.{qual.split('.', 1)[1]}"
    module = getattr(func, "__module__", None) or ""
    if module in ("torch.nn.functional", "torch._C._nn"):
        return f"F.{name}"
    if module.startswith("torch.nn.init"):
        return f"nn.init.{name}"
    if module in ("torch", "torch.functional") or head.startswith("_VariableFunctions"):
        return f"torch.{name}"
    if module.startswith("torch."):
        return f"{module}.{name}"
    return name


def _tensors(value, depth: int = 0):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)) and depth < 2:
        for item in value:
            yield from _tensors(item, depth + 1)


class _Capture(TorchFunctionMode):
    """Records each op's tensor outputs, its name and the user's source site."""

    def __init__(self, stack: list[str]):
        super().__init__()
        self.ops: list[_Op] = []
        self.stack = stack

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        outs = list(_tensors(out))
        if outs:
            # Snapshots: a later in-place op must not change what this op produced.
            snapshots = [t.clone() for t in outs]
            ids = frozenset(id(t) for t in _tensors(list(args) + list(kwargs.values())))
            self.ops.append(_Op(func, _op_name(func), user_site(0), self.stack[-1], snapshots, outs,
                                args, kwargs, ids))
        return out


@contextmanager
def _module_stack(model: nn.Module, root: str):
    """Keeps ``stack[-1]`` the path of the module whose forward is running."""
    stack = [root]

    def enter(path):
        def hook(module, args):
            stack.append(path)
        return hook

    def leave(module, args, output):
        if len(stack) > 1:
            stack.pop()

    handles = []
    for name, sub in model.named_modules():
        if name:
            handles.append(sub.register_forward_pre_hook(enter(f"{root}.{name}")))
            handles.append(sub.register_forward_hook(leave))
    try:
        yield stack
    finally:
        for h in handles:
            h.remove()


# ---------------------------------------------------------------------------------------------
# The probe: a float64 eval copy of the module and its inputs
# ---------------------------------------------------------------------------------------------


@dataclass
class _Source:
    name: str
    role: InputRole
    arg: int  # index of the positional input it comes from
    value: Tensor  # float64 primal
    embedding: str | None = None  # module path when this is an embedding output of tokens


class _Probe:
    def __init__(self, module: nn.Module, inputs: Sequence[Any], roles: Sequence[InputRole | None],
                 dims: Dims, kwargs: Mapping[str, Any] | None = None):
        self.dims = dims
        self.B, self.T = dims["B"], dims["T"]
        self.root = type(module).__name__
        self.model = _float64_copy(module)
        self.args = [_float64(a) for a in inputs]
        self.kwargs = {k: _float64(v) for k, v in (kwargs or {}).items()}
        self.roles = list(roles) + [None] * (len(self.args) - len(roles))
        self.gen = torch.Generator().manual_seed(0)
        self.paths: list[tuple[str, tuple]] = []  # outputs with a batch axis: (label, path)
        self.embeddings: list[tuple[str, int, Tensor]] = []  # (module path, token arg, output)
        self._emb_mode: str | None = None
        self._emb_queue: list[Tensor] = []
        self._token_args = [i for i, r in enumerate(self.roles)
                            if r is not None and r.tokens and isinstance(self.args[i], Tensor)]
        self._hooks = []
        self.last_capture: list[_Op] = []  # the ops of the last located run, for hints
        if self._token_args:
            for name, sub in self.model.named_modules():
                if isinstance(sub, nn.Embedding):
                    path = f"{self.root}.{name}" if name else self.root
                    self._hooks.append(sub.register_forward_hook(self._embedding_hook(path)))

    def close(self):
        for h in self._hooks:
            h.remove()

    # -- running ---------------------------------------------------------------------------
    def call(self, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None):
        """One forward on fresh copies of the inputs (a module may change its inputs in place)."""
        args, kwargs = _fresh(args), _fresh(self.kwargs if kwargs is None else kwargs)
        with _math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.model(*args, **kwargs)

    def _embedding_hook(self, path: str):
        def hook(module, inputs, output):
            if self._emb_mode is None or not inputs:
                return None
            arg = self._token_arg_of(inputs[0])
            if arg is None:
                return None
            if self._emb_mode == "record":
                self.embeddings.append((path, arg, output.detach()))
                return None
            if self._emb_mode == "replace" and self._emb_queue:
                return self._emb_queue.pop(0)
            return None
        return hook

    def _token_arg_of(self, t) -> int | None:
        if not isinstance(t, Tensor):
            return None
        for i in self._token_args:
            tok = self.args[i]
            if t.shape == tok.shape and t.dtype == tok.dtype and (
                    t.data_ptr() == tok.data_ptr() or torch.equal(t, tok)):
                return i
        return None

    @contextmanager
    def _embedding(self, mode: str | None, queue: Sequence[Tensor] = ()):
        self._emb_mode, self._emb_queue = mode, list(queue)
        try:
            yield
        finally:
            self._emb_mode, self._emb_queue = None, []

    def reference(self):
        """The first run: records the token embeddings and which outputs have a batch axis."""
        self.embeddings = []
        with torch.no_grad(), self._embedding("record"):
            out = self.call(self.args)
        self.paths = [(label, path) for label, path, t in _flatten(out)
                      if t.is_floating_point() and self.B in t.shape]
        return out

    def sources(self) -> list[_Source]:
        out: list[_Source] = []
        for i, role in enumerate(self.roles):
            value = self.args[i]
            if role is None or role.is_constant or not isinstance(value, Tensor):
                continue
            if not value.is_floating_point():
                continue
            out.append(_Source(role.name, role, i, value))
        for path, arg, value in self.embeddings:
            role = self.roles[arg]
            short = path.split(".", 1)[1] if "." in path else path
            out.append(_Source(f"{role.name} (via {short})", role, arg, value, embedding=path))
        return out

    def unembedded_tokens(self) -> list[int]:
        used = {arg for _, arg, _ in self.embeddings}
        return [i for i in self._token_args if i not in used]

    # -- dependencies ----------------------------------------------------------------------
    def dependencies(self, reference, rtol: float = RTOL, batched: bool | None = None
                     ) -> DependencyResult:
        result = DependencyResult(self.B, self.T)
        outputs = [(label, _get(reference, path)) for label, path in self.paths]
        if not outputs:
            result.reason = f"no output has a batch axis (an axis of size B={self.B})"
            return result
        axes = [_axes(t.shape, self.dims) for _, t in outputs]
        sources = self.sources()
        if sources:
            rows: list[tuple[int, Tensor]] = []
            spans: list[tuple[slice, slice | None]] = []
            for k, ((_, t), ax) in enumerate(zip(outputs, axes)):
                by_sample = self._rows(rows, k, t, ax, "batch")
                by_time = self._rows(rows, k, t, ax, "time") if ax.time else None
                spans.append((by_sample, by_time))
            reduced = self._source_rows(sources, rows, batched)
            for src, red in zip(sources, reduced):
                for (label, _), (by_sample, by_time) in zip(outputs, spans):
                    batch = _normalise(red[by_sample].sum(2)) if src.role.batch is not None else None
                    time = (_normalise(red[by_time].sum(1))
                            if by_time is not None and src.role.time is not None else None)
                    result.pairs.append(Dependency(label, src.name, src.role.stream, batch, time, rtol))
        for arg in self.unembedded_tokens():
            result.pairs.extend(self._perturbation_pairs(arg, outputs, axes, rtol))
        return result

    def _rows(self, rows: list, k: int, t: Tensor, ax: _Axes, kind: str) -> slice:
        """Append the cotangent rows of output ``k`` grouped by ``kind``; return their span."""
        start = len(rows)
        cotangents = _cotangents(t.shape, ax, kind, self.B, self.T, self.gen, t.dtype)
        rows.extend((k, row) for row in cotangents)
        return slice(start, len(rows))

    def _leaves(self, sources: list[_Source]) -> tuple[list[Tensor], list[Any], list[Tensor]]:
        """Leaf tensors for the sources, the positional args and the embedding substitutes
        (non-leaf copies of the leaves, so that in-place ops on them are allowed)."""
        leaves = [s.value.clone().requires_grad_() for s in sources]
        args = list(self.args)
        emb = []
        for s, leaf in zip(sources, leaves):
            if s.embedding is None:
                args[s.arg] = leaf  # call() and capture() pass a copy
            else:
                emb.append(leaf.clone())
        return leaves, args, emb

    def _source_rows(self, sources: list[_Source], rows, batched: bool | None) -> list[Tensor]:
        """One forward with the sources as leaves, then one backward per cotangent row."""
        leaves, args, emb = self._leaves(sources)
        with torch.enable_grad(), self._embedding("replace", emb):
            out = self.call(args)
        outs = [_get(out, path) for _, path in self.paths]
        grads = _row_grads(outs, leaves, rows, batched)
        return [_reduce(g, s.role.batch, s.role.time) for s, g in zip(sources, grads)]

    def _perturbation_pairs(self, arg: int, outputs, axes, rtol) -> list[Dependency]:
        """A token input read without nn.Embedding: change one token at a time."""
        role = self.roles[arg]
        tokens = self.args[arg]
        high = max(int(tokens.max()) + 1, 2)
        n_bi = tokens.shape[role.batch] if role.batch is not None else 1
        n_ti = tokens.shape[role.time] if role.time is not None else 1
        by_sample = [torch.zeros(self.B, n_bi, dtype=torch.float64) for _ in outputs]
        by_time = [torch.zeros(self.T, n_ti, dtype=torch.float64) if ax.time else None for ax in axes]
        for bi in range(n_bi):
            for ti in range(n_ti):
                index = [slice(None)] * tokens.dim()
                if role.batch is not None:
                    index[role.batch] = bi
                if role.time is not None:
                    index[role.time] = ti
                changed = tokens.clone()
                changed[tuple(index)] = (changed[tuple(index)] + 1) % high
                args = list(self.args)
                args[arg] = changed
                with torch.no_grad():
                    out = self.call(args)
                for k, ((_, path), ax) in enumerate(zip(self.paths, axes)):
                    delta = (_get(out, path) - outputs[k][1]).abs().nan_to_num(0.0, 0.0, 0.0)
                    index_b, n_b = _group_index(delta.shape, ax, "batch", self.B, self.T)
                    by_sample[k][:, bi] += torch.zeros(n_b, dtype=delta.dtype).scatter_add_(
                        0, index_b.reshape(-1), delta.reshape(-1))
                    if by_time[k] is not None:
                        index_t, n_t = _group_index(delta.shape, ax, "time", self.B, self.T)
                        by_time[k][:, ti] += torch.zeros(n_t, dtype=delta.dtype).scatter_add_(
                            0, index_t.reshape(-1), delta.reshape(-1))
        return [Dependency(label, role.name, role.stream,
                           _normalise(b) if role.batch is not None else None,
                           _normalise(t) if t is not None and role.time is not None else None, rtol)
                for (label, _), b, t in zip(outputs, by_sample, by_time)]

    # -- permutation and determinism -------------------------------------------------------
    def rolled_args(self) -> list[Any]:
        """The positional inputs with every sample moved one place along the batch."""
        args = list(self.args)
        for i, role in enumerate(self.roles):
            if role is not None and role.batch is not None and isinstance(args[i], Tensor):
                args[i] = args[i].roll(1, dims=role.batch)
        return args

    def rolled_kwargs(self) -> dict[str, Any]:
        """Keyword tensors whose first axis has size B (an attention mask) move with the batch."""
        return {k: v.roll(1, dims=0) if isinstance(v, Tensor) and v.dim() and v.shape[0] == self.B else v
                for k, v in self.kwargs.items()}

    def permutation_change(self, reference) -> float:
        """Largest relative change of the outputs when the batch is rolled by one place."""
        with torch.no_grad():
            out = self.call(self.rolled_args(), self.rolled_kwargs())
        worst = 0.0
        for _, path in self.paths:
            ref = _get(reference, path)
            got = _get(out, path)
            axis = _axes(ref.shape, self.dims).batch
            worst = max(worst, _relative_change(got, ref.roll(1, dims=axis)))
        return worst

    # -- locating --------------------------------------------------------------------------
    def capture(self, args, kwargs=None, *, grad: bool, leaves: Sequence[Tensor] = ()) -> list[_Op]:
        """Run once under the op-recording mode; the recorded outputs stay in the graph when
        ``grad``."""
        args, kwargs = _fresh(args), _fresh(self.kwargs if kwargs is None else kwargs)
        with _module_stack(self.model, self.root) as stack:
            mode = _Capture(stack)
            context = torch.enable_grad() if grad else torch.no_grad()
            embedding = self._embedding("replace", leaves) if leaves else nullcontext()
            with context, embedding, _math_sdpa(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with mode:
                    self.model(*args, **kwargs)
        return mode.ops

    def locate_dependency_leak(self, *, batch: bool, causal: bool, rtol: float = RTOL,
                               batched: bool | None = None) -> _Leak | None:
        """The first op whose output mixes samples (``"batch"``) or sees the future
        (``"causal"``), differentiating each op's output in the order they ran."""
        sources = self.sources()
        if not sources:
            return None
        leaves, args, emb = self._leaves(sources)
        ops = self.capture(args, grad=True, leaves=emb)
        self.last_capture = ops
        kinds = (["batch"] if batch else []) + (["time"] if causal else [])
        for op in ops:
            for t in op.outputs:
                if not (t.is_floating_point() and t.requires_grad):
                    continue
                ax = _axes(t.shape, self.dims)
                rows: list[tuple[int, Tensor]] = []
                spans = {kind: self._rows(rows, 0, t, ax, kind) for kind in kinds}
                try:
                    grads = _row_grads([t], leaves, rows, batched)
                except RuntimeError:
                    continue
                for s, g in zip(sources, grads):
                    red = _reduce(g, s.role.batch, s.role.time)
                    if "batch" in spans and s.role.batch is not None:
                        used = _normalise(red[spans["batch"]].sum(2)) > rtol
                        if _mixes_samples(used, ax):
                            return _Leak(op, "batch", used if ax.batch is not None else None)
                    if "time" in spans and s.role.stream == "query" and s.role.time is not None:
                        used = _normalise(red[spans["time"]].sum(1)) > rtol
                        if _sees_future(used, ax, _drops_time(op, self.T)):
                            return _Leak(op, "causal", used if ax.time else None)
        return None

    def locate_difference(self, *, roll: bool) -> _Op | None:
        """The first op whose outputs differ between two runs: on the same inputs, or on the
        batch rolled by one place (``roll``; its outputs are compared rolled back)."""
        first = self.capture(self.args, grad=False)
        if roll:
            second = self.capture(self.rolled_args(), self.rolled_kwargs(), grad=False)
        else:
            second = self.capture(self.args, grad=False)
        for a, b in zip(first, second):
            if a.name != b.name or len(a.outputs) != len(b.outputs):
                return None
            for ta, tb in zip(a.outputs, b.outputs):
                if ta.shape != tb.shape:
                    return None
                if roll:
                    axis = next((i for i, s in enumerate(ta.shape) if s == self.B), None)
                    if axis is None:
                        continue
                    if _relative_change(tb, ta.roll(1, dims=axis)) > PERMUTATION_RTOL:
                        return a
                elif not _same(ta, tb):
                    return a
        return None


def _mixes_samples(used: Tensor, ax: _Axes) -> bool:
    """``used`` is (rows, B_in): rows are samples, or one row when the output has no batch axis."""
    if ax.batch is not None:
        return bool((used & ~torch.eye(*used.shape, dtype=torch.bool)).any())
    if ax.batch_merged:
        return False  # (B*H, ...) layouts: the samples cannot be told apart here
    return int(used.any(dim=0).sum()) > 1


def _sees_future(used: Tensor, ax: _Axes, drops_time: bool) -> bool:
    """``used`` is (rows, T_in): rows are latest time coordinates, or one row without a time axis.

    Without a time axis, an output that depends on several positions leaks only when the op
    itself removed the time axis other than by picking positions: ``x.mean(dim=1)`` leaks,
    ``x[:, -1]`` (the last position sees them all) and the ops after it do not."""
    if ax.time:
        return bool(used.triu(1).any())
    if ax.time_merged or not drops_time:
        return False
    return int(used.any(dim=0).sum()) > 1


_PICKS = {"__getitem__", "select", "narrow", "index_select", "gather", "take_along_dim", "unbind",
          "split", "chunk", "tensor_split", "split_with_sizes"}


def _drops_time(op: _Op, T: int) -> bool:
    """The op took a tensor with a time axis and does not merely pick positions from it."""
    if op.name.split(".")[-1] in _PICKS:
        return False
    return any(T in t.shape for t in _tensors(list(op.args) + list(op.kwargs.values())))


@dataclass
class _Leak:
    op: _Op
    kind: str  # "batch" | "causal"
    used: Tensor | None  # the op output's (B, B) or (T, T) dependency grid, when it has the axes


def _normalise(strength: Tensor) -> Tensor:
    peak = float(strength.max()) if strength.numel() else 0.0
    return strength / peak if peak > 0 else torch.zeros_like(strength)


def _row_grads(outputs: Sequence[Tensor], leaves: Sequence[Tensor], rows: Sequence[tuple[int, Tensor]],
               batched: bool | None = None) -> list[Tensor]:
    """For each leaf, (len(rows), *leaf.shape): the gradient of row r, which is a cotangent
    ``rows[r][1]`` on output ``rows[r][0]``.

    ``batched=None`` picks: autograd's vmap-batched backward (one pass for all rows) when the
    modules it needs are already loaded, else one scalar backward pass per row. The first
    batched backward in a process imports sympy and torch's symbolic-shape machinery (0.4 s;
    ``torch.func.vmap`` imports torch._dynamo, 1 s), far more than the whole check costs.
    """
    if batched is None:
        batched = "torch.fx.experimental.symbolic_shapes" in sys.modules
    if batched:
        try:
            cots = []
            for k, o in enumerate(outputs):
                z = torch.zeros((len(rows), *o.shape), dtype=o.dtype)
                for r, (owner, row) in enumerate(rows):
                    if owner == k:
                        z[r] = row
                cots.append(z)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                grads = torch.autograd.grad(list(outputs), list(leaves), cots, is_grads_batched=True,
                                            retain_graph=True, allow_unused=True)
            return [torch.zeros((len(rows), *leaf.shape), dtype=leaf.dtype) if g is None else g
                    for leaf, g in zip(leaves, grads)]
        except RuntimeError:
            pass  # an op without a batching rule: one row at a time
    out = [torch.zeros((len(rows), *leaf.shape), dtype=leaf.dtype) for leaf in leaves]
    for r, (k, row) in enumerate(rows):
        if not outputs[k].requires_grad:
            continue
        grads = torch.autograd.grad((outputs[k] * row).sum(), list(leaves), retain_graph=True,
                                    allow_unused=True)
        for j, g in enumerate(grads):
            if g is not None:
                out[j][r] = g
    return out


def _float64(value):
    """A float64 copy of a floating tensor (never the caller's storage); other values as they are."""
    if isinstance(value, Tensor):
        value = value.detach()
        return value.to(torch.float64, copy=True) if value.is_floating_point() else value.clone()
    return value


def _fresh(values):
    """Copies of the tensors in a list or dict of arguments, for one run."""
    if isinstance(values, Mapping):
        return {k: v.clone() if isinstance(v, Tensor) else v for k, v in values.items()}
    return [v.clone() if isinstance(v, Tensor) else v for v in values]


def _float64_copy(module: nn.Module) -> nn.Module:
    model = copy.deepcopy(module)
    model.to(torch.float64)
    for sub in model.modules():  # plain tensor attributes (not buffers) follow the dtype too
        for key, value in list(vars(sub).items()):
            plain = isinstance(value, Tensor) and type(value) is not nn.Parameter
            if plain and value.is_floating_point():
                setattr(sub, key, value.to(torch.float64))
    model.requires_grad_(False)
    return model.eval()


@contextmanager
def _one_thread():
    """Probe-size tensors are tiny: intra-op threads only add overhead (and stall badly when
    the cores are busy), so the checks run on one thread and restore the setting after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def _math_sdpa():
    """The math SDPA kernel: differentiable under vmap, and masked weights are exactly 0."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # pragma: no cover - older torch
        yield
        return
    with sdpa_kernel([SDPBackend.MATH]):
        yield


def _flatten(out, label: str = "output", path: tuple = (), depth: int = 0):
    """(label, path, tensor) for every tensor in a tensor / tuple / dict / ModelOutput."""
    if isinstance(out, Tensor):
        yield label, path, out
        return
    if depth >= 3:
        return
    if isinstance(out, (tuple, list)):
        for i, item in enumerate(out):
            yield from _flatten(item, f"{label}[{i}]", path + (i,), depth + 1)
    elif isinstance(out, Mapping) or (_dict_like(out)):
        try:  # dicts and Hugging Face ModelOutput; a cache object is not a container of outputs
            items = [(key, out[key]) for key in out.keys()]
        except Exception:  # noqa: BLE001
            return
        for key, item in items:
            yield from _flatten(item, str(key), path + (key,), depth + 1)


def _dict_like(out) -> bool:
    return callable(getattr(out, "keys", None)) and hasattr(out, "__getitem__")


def _get(out, path: tuple):
    for key in path:
        out = out[key]
    return out


def _same(a: Tensor, b: Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a, b) or ((a == b) | (a.isnan() & b.isnan())).all())
    return bool(torch.equal(a, b))


def _relative_change(got: Tensor, want: Tensor) -> float:
    if got.shape != want.shape:
        return math.inf
    if not got.is_floating_point():
        return 0.0 if torch.equal(got, want) else math.inf
    finite = got.isfinite() & want.isfinite()
    scale = float(want[finite].abs().max()) if finite.any() else 0.0
    diff = float((got - want)[finite].abs().max()) if finite.any() else 0.0
    if (got.isfinite() != want.isfinite()).any():
        return math.inf
    return diff / scale if scale > 0 else diff


def _max_change(a, b) -> float:
    worst = 0.0
    for (_, _, ta), (_, _, tb) in zip(_flatten(a), _flatten(b)):
        if ta.is_floating_point() and ta.shape == tb.shape and not _same(ta, tb):
            finite = ta.isfinite() & tb.isfinite()
            worst = max(worst, float((ta - tb)[finite].abs().max()) if finite.any() else math.inf)
    return worst


def _outputs_equal(a, b) -> bool:
    fa, fb = list(_flatten(a)), list(_flatten(b))
    return len(fa) == len(fb) and all(_same(x, y) for (_, _, x), (_, _, y) in zip(fa, fb))


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------


def dependencies(module: nn.Module, inputs: Sequence[Any],
                 roles: Sequence[InputRole | None] | None = None, *,
                 dims: Dims | None = None, kwargs: Mapping[str, Any] | None = None,
                 rtol: float = RTOL, batched: bool | None = None) -> DependencyResult:
    """Which output (sample, position) depends on which input (sample, position).

    Runs a float64 eval copy of ``module`` (the module itself is not changed) with ``inputs``
    as positional arguments and ``kwargs`` as fixed keyword arguments. ``batched`` forces the
    vmap-batched backward (True) or one backward per row (False); None picks the cheaper one.
    Raises what the module raises.
    """
    dims = dims or Dims()
    roles = list(roles) if roles is not None else infer_roles(inputs, dims)
    reason = _ambiguity(dims, roles)
    if reason:
        return DependencyResult(dims["B"], dims["T"], reason=reason)
    probe = _Probe(module, inputs, roles, dims, kwargs)
    try:
        with torch.random.fork_rng(devices=[]), _one_thread():
            torch.manual_seed(0)
            reference = probe.reference()
            return probe.dependencies(reference, rtol, batched)
    finally:
        probe.close()


def check_behaviour(module: nn.Module, inputs: Sequence[Any],
                    roles: Sequence[InputRole | None] | None = None, *,
                    causal: bool | None, dims: Dims | None = None,
                    kwargs: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """``causal-leak``, ``batch-leak`` and ``nondeterministic-eval`` diagnostics for a module."""
    return run_behaviour(module, inputs, roles, causal=causal, dims=dims, kwargs=kwargs).diagnostics


def run_behaviour(module: nn.Module, inputs: Sequence[Any],
                  roles: Sequence[InputRole | None] | None = None, *,
                  causal: bool | None, dims: Dims | None = None,
                  kwargs: Mapping[str, Any] | None = None) -> BehaviourResult:
    """Run every behaviour check. ``causal=None`` skips the causal-leak check (the dependency
    pattern is still reported, and ``notes`` says when the module is causal in practice)."""
    dims = dims or Dims()
    roles = list(roles) if roles is not None else infer_roles(inputs, dims)
    result = BehaviourResult()
    try:
        probe = _Probe(module, inputs, roles, dims, kwargs)
    except Exception as exc:  # noqa: BLE001 - a module that cannot be copied is not checked
        result.skipped.append(f"behaviour checks: the module could not be copied to float64 ({exc})")
        return result
    try:
        with torch.random.fork_rng(devices=[]), _one_thread():
            torch.manual_seed(0)
            _run_checks(probe, result, causal)
    except Exception as exc:  # noqa: BLE001 - the trace reports the module's own failure
        result.diagnostics = []
        result.skipped.append(f"behaviour checks: the module raised while re-running "
                              f"({type(exc).__name__}: {exc})")
    finally:
        probe.close()
    return result


def _ambiguity(dims: Dims, roles: Sequence[InputRole | None]) -> str | None:
    B, T = dims["B"], dims["T"]
    if B == T:
        return (f"B and T are both {B}, so the batch and time axes of the outputs cannot be told "
                f"apart; give them different sizes (e.g. --dims B=5,T=7)")
    has_context = any(r is not None and r.stream == "context" and r.time is not None for r in roles)
    if has_context and dims["S"] == B:
        return f"B and S are both {B}, so the batch axis cannot be told apart from the context axis"
    if B < 2:
        return "B is 1: there is no other sample to leak into"
    return None


_DROPOUT_NAME = re.compile(r"drop|\Ap\Z|\Ap_\w+")  # dropout, attn_pdrop, drop_rate, p, p_attn
_PROBE_P = 0.1


@contextmanager
def _dropout_switched_on(model: nn.Module):
    """Dropout rates of 0 raised to 0.1 for the determinism check, then put back.

    Modules are built with dropout=0.0 so every other check sees a deterministic function;
    that would also hide ``F.dropout(x, self.dropout)`` left on in eval. With a real rate, eval
    stays deterministic exactly when every dropout follows ``self.training``.
    """
    saved = []
    for sub in model.modules():
        if isinstance(sub, nn.modules.dropout._DropoutNd) and sub.p == 0.0:
            saved.append((sub, "p", sub.p))
            sub.p = _PROBE_P
        for key, value in list(vars(sub).items()):
            if (type(value) is float and value == 0.0 and _DROPOUT_NAME.search(key)
                    and not key.startswith("_")):
                saved.append((sub, key, value))
                setattr(sub, key, _PROBE_P)
    try:
        yield
    finally:
        for sub, key, value in reversed(saved):
            setattr(sub, key, value)


def _run_checks(probe: _Probe, result: BehaviourResult, causal: bool | None) -> None:
    first = probe.reference()
    with torch.no_grad():
        second = probe.call(probe.args)
    deterministic = _outputs_equal(first, second)
    if not deterministic:
        result.diagnostics.append(_nondeterministic(probe, _max_change(first, second)))
    else:
        with torch.no_grad(), _dropout_switched_on(probe.model):
            once, twice = probe.call(probe.args), probe.call(probe.args)
            if not _outputs_equal(once, twice):
                result.diagnostics.append(_nondeterministic(probe, _max_change(once, twice)))

    reason = _ambiguity(probe.dims, probe.roles)
    if reason:
        result.skipped.append(f"batch-leak and causal-leak not checked: {reason}")
        return
    dep = probe.dependencies(first)
    result.dependency = dep
    if dep.reason:
        result.skipped.append(f"batch-leak and causal-leak not checked: {dep.reason}")
        return

    mixing = dep.batch_leaks()
    future = dep.causal_leaks() if causal else []
    located: dict[str, _Leak] = {}
    wanted = {"batch": bool(mixing), "causal": bool(future)}
    while any(want and kind not in located for kind, want in wanted.items()):
        try:  # one run finds the first op of either kind; a second run looks for the other
            found = probe.locate_dependency_leak(batch=wanted["batch"] and "batch" not in located,
                                                 causal=wanted["causal"] and "causal" not in located)
        except Exception:  # noqa: BLE001 - the leak stands even when no op can be named
            found = None
        if found is None:
            break
        located[found.kind] = found
    hidden = None  # a causal leak found inside when no output has a time axis to show it
    if causal and dep.time_grid is None and any(s.role.stream == "query" and s.role.time is not None
                                                for s in probe.sources()):
        try:
            hidden = probe.locate_dependency_leak(batch=False, causal=True)
        except Exception:  # noqa: BLE001
            hidden = None
    if mixing:
        leak = located.get("batch")
        result.diagnostics.append(_batch_mixing(probe, dep, mixing, leak.op if leak else None))
    elif deterministic:
        change = probe.permutation_change(first)
        if change > PERMUTATION_RTOL:
            try:
                op = probe.locate_difference(roll=True)
            except Exception:  # noqa: BLE001 - the leak stands even when no op can be named
                op = None
            result.diagnostics.append(_batch_position(probe, dep, change, op))
    else:
        result.skipped.append("batch-leak: whether outputs follow their sample when the batch is "
                              "reordered was not checked, as two runs already differ")
    if future:
        leak = located.get("causal")
        result.diagnostics.append(_causal(probe, dep.time_grid, dep, leak.op if leak else None))
    elif hidden is not None:
        result.diagnostics.append(_causal(probe, hidden.used, dep, hidden.op, inside=True))
    elif causal is None and looks_causal(dep):
        result.notes.append("the module is causal in practice: "
                            "no output position depends on a later one")


# ---------------------------------------------------------------------------------------------
# Diagnostics
# ---------------------------------------------------------------------------------------------


@dataclass
class _Where:
    file: str | None = None
    line: int | None = None
    op: str | None = None
    module: str | None = None
    segment: str = ""  # the source expression, "F.softmax(att, dim=-1)"
    text: str = ""  # "`F.softmax(att, dim=-1)` (F.softmax over dim=-1, axis T) at model.py:31"


def _where(probe: _Probe, op: _Op | None) -> _Where:
    if op is None or op.site is None:
        return _Where(module=op.module if op else probe.root)
    filename, line, col, end_col = resolve_site(op.site[0], op.site[1])
    segment = source_segment(filename, line, col, end_col)
    name = _display_op(op.name, segment)
    file = display_path(filename)
    text = f"`{segment}` ({_describe(op, name, probe.dims)}) at {file}:{line}"
    return _Where(file, line, name, op.module, segment, text)


_BINOPS = {ast.MatMult: "@", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_BINOP_FUNCS = {"@": ("matmul", "__matmul__", "__rmatmul__"), "+": ("add", "__add__", "__radd__"),
                "-": ("sub", "__sub__", "__rsub__"), "*": ("mul", "__mul__", "__rmul__"),
                "/": ("div", "__truediv__", "__rtruediv__")}


def _display_op(name: str, segment: str) -> str:
    """``@`` rather than ``Tensor.matmul`` when the source says ``a @ b``."""
    try:
        node = ast.parse(segment.strip(), mode="eval").body
    except SyntaxError:
        return name
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        symbol = _BINOPS[type(node.op)]
        if name.split(".")[-1] in _BINOP_FUNCS[symbol]:
            return symbol
    return name


_REDUCTIONS = {"mean", "sum", "var", "std", "softmax", "log_softmax", "amax", "amin", "max", "min",
               "logsumexp", "norm", "prod", "var_mean", "std_mean", "median", "cumsum", "nansum",
               "nanmean", "argmax", "argmin", "normalize"}


def _reduction(op: _Op) -> tuple[list[int], str] | None:
    """The axes a reduction / softmax / norm runs over and how the call named them
    (``"dim=1"``, ``"the last 2 axes"``), or None when the op is not one."""
    base = op.name.split(".")[-1]
    x = op.args[0] if op.args and isinstance(op.args[0], Tensor) else None
    if x is None or base in ("group_norm", "batch_norm", "instance_norm"):
        return None
    n = x.dim()
    if base == "layer_norm":
        shape = op.kwargs.get("normalized_shape", op.args[1] if len(op.args) > 1 else None)
        if shape is None:
            return None
        k = len(shape) if isinstance(shape, (tuple, list, torch.Size)) else 1
        return list(range(n - k, n)), f"the last {k} axes" if k > 1 else "the last axis"
    if base not in _REDUCTIONS:
        return None
    position = 2 if base == "normalize" else 1
    dim = op.kwargs.get("dim", op.args[position] if len(op.args) > position else None)
    if dim is None:
        if base == "normalize":
            dim = 1
        else:
            return list(range(n)), "all axes"
    dims = [dim] if isinstance(dim, int) else dim
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims) or not n:
        return None
    return [d % n for d in dims], f"dim={dim}"


def _describe(op: _Op, name: str, dims: Dims) -> str:
    """``F.softmax over dim=0, axis B``: the op, and the named axes it reduces over."""
    found = _reduction(op)
    if not found:
        return name
    axes, how = found
    labels = ", ".join(dims.label(op.args[0].shape[a]) for a in axes)
    return f"{name} over {how}, axis {labels}" if len(axes) == 1 else f"{name} over {how}, axes {labels}"


def _axis_names(op: _Op | None, dims: Dims) -> set[str]:
    found = _reduction(op) if op is not None else None
    if not found:
        return set()
    return {dims.label(op.args[0].shape[a]) for a in found[0]}


def _grid(used: Tensor, expected: str, axis: str, what: str) -> dict[str, Any]:
    n_rows, n_cols = used.shape
    cells = []
    for r in range(n_rows):
        row = []
        for c in range(n_cols):
            allowed = c <= r if expected == "lower" else c == r
            row.append(UNUSED if not used[r, c] else (USED if allowed else LEAK))
        cells.append(row)
    return {"rows": [str(i) for i in range(n_rows)], "cols": [str(i) for i in range(n_cols)],
            "row_axis": f"output {what} ({axis})", "col_axis": f"input {what} ({axis})",
            "expected": expected, "cells": cells}


def grid_text(data: Mapping[str, Any]) -> str:
    """A dependency grid as plain text: ``■`` used, ``·`` unused, ``✗`` used but forbidden.

    Rows are output positions (or samples), columns input ones.
    """
    grid = data.get("grid") if "grid" in data else data
    if not grid:
        return ""
    rows, cols, cells = grid["rows"], grid["cols"], grid["cells"]
    width = max(len(r) for r in rows) if rows else 1
    col_width = max([len(c) for c in cols] + [1])
    lines = [f"rows: {grid.get('row_axis', 'output')}, columns: {grid.get('col_axis', 'input')}",
             " " * (width + 1) + " ".join(c.rjust(col_width) for c in cols)]
    for label, row in zip(rows, cells):
        lines.append(label.rjust(width) + " " + " ".join(_SYMBOLS[v].rjust(col_width) for v in row))
    lines.append("■ used  · unused  ✗ leak")
    return "\n".join(lines)


def _sources_text(dep: DependencyResult, kind: str) -> str:
    names = []
    for p in dep.pairs:
        grid = p.batch if kind == "batch" else p.time
        if grid is None:
            continue
        bad = grid & ~torch.eye(*grid.shape, dtype=torch.bool) if kind == "batch" else grid.triu(1)
        if bad.any() and p.source not in names:
            names.append(p.source)
    return ", ".join(f"`{n}`" for n in names) or "the input"


def _causal(probe: _Probe, grid: Tensor | None, dep: DependencyResult, op: _Op | None, *,
            inside: bool = False) -> Diagnostic:
    """A causal leak seen in the outputs' T x T grid, or (``inside``) in an intermediate tensor
    when no output has a time axis (a model that returns the last position's logits only)."""
    where = _where(probe, op)
    leaks = [tuple(ix) for ix in grid.triu(1).nonzero().tolist()] if grid is not None else []
    T = probe.T
    if inside:
        message = ("no output has a time axis (T), so the tensors inside were checked: "
                   f"{where.text or 'an op'} sees later positions")
        if leaks:
            row, col = min(leaks)
            message += f" (its position {row} depends on input position {col})"
    else:
        row, col = min(leaks)
        message = (f"output position {row} depends on input position {col} of "
                   f"{_sources_text(dep, 'time')}, a later one ({len(leaks)} of the "
                   f"{T * (T - 1) // 2} future pairs over T leak)")
        message += (f"; the first op that sees the future is {where.text}" if where.text
                    else "; no single op could be named")
    data: dict[str, Any] = {"leaks": len(leaks)}
    if grid is not None:
        data["grid"] = _grid(grid, "lower", "T", "position")
        data["grid_text"] = grid_text(data)
    return Diagnostic("causal-leak", "error", message, _causal_hint(probe, op), where.file, where.line,
                      where.module, where.op, data=data)


def _batch_mixing(probe: _Probe, dep: DependencyResult, leaks, op: _Op | None) -> Diagnostic:
    where = _where(probe, op)
    grid = dep.batch_grid
    B = grid.shape[0]
    row, col = min(leaks)
    message = (f"samples in the batch (B) are mixed: the output of sample {row} depends on sample {col} "
               f"of {_sources_text(dep, 'batch')} ({len(leaks)} of {B * (B - 1)} cross-sample pairs)")
    message += f"; the first op that mixes samples is {where.text}" if where.text else \
        "; no single op could be named"
    data = {"kind": "mixing", "grid": _grid(grid, "diagonal", "B", "sample"), "leaks": len(leaks)}
    data["grid_text"] = grid_text(data)
    return Diagnostic("batch-leak", "error", message, _batch_hint(probe, op), where.file, where.line,
                      where.module, where.op, data=data)


def _batch_position(probe: _Probe, dep: DependencyResult, change: float, op: _Op | None) -> Diagnostic:
    where = _where(probe, op)
    grid = dep.batch_grid
    message = (f"a sample's output depends on its position in the batch (B): moving every sample one "
               f"place along the batch changed the outputs by up to {change:.3g} (relative)")
    message += f"; the first op that depends on the batch position is {where.text}" if where.text else ""
    indexing = ("arange", "__getitem__", "embedding", "index_select", "narrow", "gather")
    if op is not None and op.name.split(".")[-1] in indexing:
        hint = ("Positions must come from the time axis: for a (B, T, C) input x.shape[0] / x.size(0) "
                "is B. Use torch.arange(x.shape[1]) (T) to index position tables, and slice them "
                "with [:T].")
    else:
        hint = ("A sample's output must not depend on where it sits in the batch: look for sizes or "
                "indices taken from the batch axis (x.shape[0] is B for a (B, T, C) input).")
    data: dict[str, Any] = {"kind": "position", "max_change": change, "leaks": 0}
    if grid is not None:
        data["grid"] = _grid(grid, "diagonal", "B", "sample")
    return Diagnostic("batch-leak", "error", message, hint, where.file, where.line, where.module,
                      where.op, data=data)


def _nondeterministic(probe: _Probe, change: float) -> Diagnostic:
    try:
        op = probe.locate_difference(roll=False)
    except Exception:  # noqa: BLE001 - the finding stands even when no op can be named
        op = None
    where = _where(probe, op)
    message = (f"two runs in eval mode with the same inputs gave different outputs "
               f"(largest difference {change:.3g})")
    message += f"; the first op that differs is {where.text}" if where.text else ""
    base = (op.name.split(".")[-1] if op else "")
    if "dropout" in base:
        hint = ("F.dropout defaults to training=True whatever the module's mode: pass "
                "training=self.training, or use an nn.Dropout module, which follows model.eval().")
    else:
        hint = ("In eval mode the output must be a function of the inputs: gate random ops on "
                "self.training (F.dropout(x, p, training=self.training), or nn.Dropout).")
    return Diagnostic("nondeterministic-eval", "error", message, hint, where.file, where.line,
                      where.module, where.op, data={"max_change": change})


def _is_mha(probe: _Probe, op: _Op | None) -> nn.MultiheadAttention | None:
    if op is None:
        return None
    prefix = probe.root + "."
    if not op.module.startswith(prefix):
        return None
    sub = probe.model.get_submodule(op.module[len(prefix):])
    return sub if isinstance(sub, nn.MultiheadAttention) else None


def _batch_hint(probe: _Probe, op: _Op | None) -> str:
    mha = _is_mha(probe, op)
    if mha is not None and not mha.batch_first:
        return ("nn.MultiheadAttention expects (T, B, C) unless batch_first=True: it attended across "
                "the batch. Construct it with batch_first=True, or transpose the input to (T, B, C) "
                "and the output back.")
    if "B" in _axis_names(op, probe.dims):
        return (f"{op.name} runs over the batch axis (B), so samples see each other: reduce over the "
                f"keys or features (dim=-1) instead.")
    return ("Every op must treat the samples independently: check the axis order ((B, T, C) vs "
            "(T, B, C)) and that no reduction, softmax or norm runs over the batch axis.")


def _causal_hint(probe: _Probe, op: _Op | None) -> str:
    base = op.name.split(".")[-1] if op else ""
    axes = _axis_names(op, probe.dims)
    if base == "scaled_dot_product_attention":
        mask = op.kwargs.get("attn_mask", op.args[3] if len(op.args) > 3 else None)
        if isinstance(mask, Tensor) and mask.dtype == torch.bool:
            return ("A boolean attn_mask in F.scaled_dot_product_attention is True where a query MAY "
                    "attend (the opposite of masked_fill's mask): use torch.tril(torch.ones(T, T, "
                    "dtype=torch.bool)), or drop the mask and pass is_causal=True.")
        if isinstance(mask, Tensor):
            return ("A float attn_mask is added to the scores: it must be 0 where a query may attend "
                    "and -inf at later keys. Or drop it and pass is_causal=True.")
        return "Pass is_causal=True (or a causal attn_mask) to F.scaled_dot_product_attention."
    if _is_mha(probe, op) is not None:
        return ("Pass a causal attn_mask to nn.MultiheadAttention: torch.triu(torch.ones(T, T, "
                "dtype=torch.bool), diagonal=1) (True = blocked), or nn.Transformer.generate_square_"
                "subsequent_mask(T).")
    if "T" in axes and base not in ("softmax", "log_softmax"):
        return (f"{op.name} runs over the time axis (T), so every position sees the whole sequence, "
                f"future included: normalise or reduce over the features (dim=-1, as nn.LayerNorm "
                f"does) instead.")
    note = _mask_note(probe, op)
    if base in ("softmax", "log_softmax"):
        return ("The scores reach the softmax without a causal mask: fill later positions with "
                "float('-inf') first, scores = scores.masked_fill(future, float('-inf'))." + note)
    if base in ("matmul", "bmm", "einsum", "__matmul__", "baddbmm") or (op and op.name == "@"):
        return ("The attention weights give non-zero weight to later positions: fill the masked scores "
                "with float('-inf') or torch.finfo(scores.dtype).min before the softmax." + note)
    return "A causal model's output at position t must depend on inputs 0..t only." + note


def _mask_note(probe: _Probe, op: _Op | None) -> str:
    """Points at a masked_fill whose result was dropped, or whose fill value is too small."""
    ops = probe.last_capture
    if not ops:
        return ""
    consumed: set[int] = set()
    for later in ops:
        consumed |= later.input_ids
    for earlier in ops:
        if earlier is op:
            break
        base = earlier.name.split(".")[-1]
        scores = earlier.outputs and sum(size == probe.T for size in earlier.outputs[0].shape) >= 2
        if base not in ("masked_fill", "where", "masked_fill_") or not scores:
            continue  # only masks on (.., T, T) scores
        where = _where(probe, earlier)
        if base == "masked_fill" and not any(id(t) in consumed for t in earlier.originals):
            return (f" The result of `{where.segment}` at {where.file}:{where.line} is never "
                    f"used: assign it (scores = scores.masked_fill(...)) or use masked_fill_.")
        value = earlier.kwargs.get("value", earlier.args[2] if len(earlier.args) > 2 else None)
        if isinstance(value, (int, float)) and abs(value) < 1e3:
            return (f" `{where.segment}` at {where.file}:{where.line} fills with {value!r}, "
                    f"which hardly changes the scores: use float('-inf').")
    return ""
