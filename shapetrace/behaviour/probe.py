"""The probe: a float64 eval copy of the module and its inputs, run again to measure what its
outputs depend on.

Dependencies come from plain autograd: one forward with the inputs (or the token embeddings) as
leaves, then one backward pass per row of output elements (a sample, or a latest time
coordinate) with a random cotangent on the row, batched with vmap when autograd's batching is
already loaded. Token inputs read without ``nn.Embedding`` are perturbed one token at a time.
The batch reordered and side inputs changed sample by sample are in ``shuffle``; locating
the op that leaks is in ``locate``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..base.compat import batched_grad_loaded, disable_torch_function
from ..base.dims import Dims
from ..record.tensors import tensors_in
from .results import RTOL, Dependency, DependencyResult
from .roles import InputRole
from .runs import flatten, float64_copy, fresh, get, math_sdpa, to_float64
from .state import ModuleState

# ---------------------------------------------------------------------------------------------
# Axes of outputs, by size
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Axes:
    """Where the batch and time axes of a tensor are, told by their sizes."""

    batch: int | None
    time: tuple[int, ...]
    batch_merged: bool  # an axis such as B*H or B*T: samples are there but not separable
    time_merged: bool


def axes_of(shape: Sequence[int], dims: Dims) -> Axes:
    B, T = dims["B"], dims["T"]
    batch = next((i for i, s in enumerate(shape) if s == B), None)
    if batch is not None and list(shape).count(B) > 1:
        batch = None  # (B, B): sample i against sample j (in-batch negatives), mixed by design
    time = tuple(i for i, s in enumerate(shape) if s == T and i != batch)
    batch_merged = time_merged = False
    for i, s in enumerate(shape):
        if s in (B, T, 1) or i == batch or i in time:
            continue
        factors = dims.label(s).split("*")
        batch_merged |= "B" in factors
        time_merged |= "T" in factors
    return Axes(batch, time, batch_merged, time_merged)


def group_index(shape: Sequence[int], ax: Axes, kind: str, B: int, T: int) -> tuple[Tensor, int]:
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


def _cotangents(shape: Sequence[int], ax: Axes, kind: str, B: int, T: int, gen: torch.Generator,
                dtype: torch.dtype) -> Tensor:
    """(rows, *shape): row r holds random values on the elements of row r, zeros elsewhere."""
    index, n_rows = group_index(shape, ax, kind, B, T)
    rows = torch.arange(n_rows).view(-1, *([1] * len(shape)))
    noise = torch.randn(tuple(shape), generator=gen, dtype=dtype)
    return (index.unsqueeze(0) == rows).to(dtype) * noise


def reduce_grad(grad: Tensor, batch: int | None, time: int | None) -> Tensor:
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


def normalise(strength: Tensor) -> Tensor:
    peak = float(strength.max()) if strength.numel() else 0.0
    return strength / peak if peak > 0 else torch.zeros_like(strength)


# ---------------------------------------------------------------------------------------------
# The probe
# ---------------------------------------------------------------------------------------------


@dataclass
class Source:
    """Something the outputs may depend on: a floating input, or a token input's embedding."""

    name: str
    role: InputRole
    arg: int  # index of the positional input it comes from
    value: Tensor  # float64 primal
    embedding: str | None = None  # module path when this is an embedding output of tokens


class Probe:
    """A float64 eval copy of ``module`` (made from ``copied``, the caller's deep copy) with
    float64 copies of its inputs; the caller's module and tensors are never touched."""

    def __init__(self, copied: nn.Module, inputs: Sequence[Any], roles: Sequence[InputRole | None],
                 dims: Dims, kwargs: Mapping[str, Any] | None = None, *, root: str):
        self.dims = dims
        self.B, self.T = dims["B"], dims["T"]
        self.root = root
        self.model = to_float64(copied)
        self._state = ModuleState(self.model)
        #: attributes or buffers with a batch axis that a run changed: a cache kept across calls
        self.per_sample_state: list[str] = []
        self.args = [float64_copy(a) for a in inputs]
        self.kwargs = {k: float64_copy(v) for k, v in (kwargs or {}).items()}
        self.roles = list(roles) + [None] * (len(self.args) - len(roles))
        self.gen = torch.Generator().manual_seed(0)
        #: a seed every run starts torch's generator from, once the module is found random in
        #: eval: the runs that compare outputs then draw the same numbers (noise, dropout
        #: masks), and a change can only come from the input changed (None: draws follow on)
        self.reseed: int | None = None
        #: what the module's constructor made on its own lines (``record.built``): the place a
        #: value made once (a position table) was made
        self.built: tuple = ()
        self.built_indices: tuple = ()  # and the tensors of integers (an index of offsets)
        self.paths: list[tuple[str, tuple]] = []  # outputs with a batch axis: (label, path)
        self.embeddings: list[tuple[str, int, Tensor]] = []  # (module path, token arg, output)
        self._emb_mode: str | None = None
        self._emb_queue: list[Tensor] = []
        self._token_args = [i for i, r in enumerate(self.roles)
                            if r is not None and r.tokens and isinstance(self.args[i], Tensor)]
        self._hooks = []
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
        args, kwargs = fresh(args), fresh(self.kwargs if kwargs is None else kwargs)
        self.restore_state()
        if self.reseed is not None:
            torch.default_generator.manual_seed(self.reseed)
        with math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.model(*args, **kwargs)

    def restore_state(self, *, weights: bool = True) -> None:
        """Put back what an earlier run changed in the module (a cache kept across calls, a
        call counter, running statistics): every run starts from the same state, so two runs
        differ only through randomness, and each check sees the same function.
        ``weights=False`` leaves the parameters as they are (changed on purpose by a check)."""
        self._state.restore(weights=weights)

    def _embedding_hook(self, path: str):
        def hook(module, inputs, output):
            if self._emb_mode is None or not inputs:
                return None
            with disable_torch_function():  # not one of the module's ops, even under a trace
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
    def embedding(self, mode: str | None, queue: Sequence[Tensor] = ()):
        """While entered, token embeddings are recorded (``"record"``) or replaced by the
        tensors of ``queue`` in order (``"replace"``)."""
        self._emb_mode, self._emb_queue = mode, list(queue)
        try:
            yield
        finally:
            self._emb_mode, self._emb_queue = None, []

    def reference(self):
        """The first run: records the token embeddings and which outputs have a batch axis."""
        self.embeddings = []
        with torch.no_grad(), self.embedding("record"):
            out = self.call(self.args)
        self.per_sample_state = [name for name, value in self._state.changed()
                                 if any(self.B in t.shape for t in tensors_in(value))]
        self.paths = [(label, path) for label, path, t in flatten(out)
                      if t.is_floating_point() and self.B in t.shape]
        return out

    def sources(self) -> list[Source]:
        out: list[Source] = []
        for i, role in enumerate(self.roles):
            value = self.args[i]
            if role is None or role.is_constant or not isinstance(value, Tensor):
                continue
            if not value.is_floating_point() or role.tokens:  # codes cast to indices: changed
                continue  # one at a time, within their range (``_perturbation_pairs``)
            out.append(Source(role.name, role, i, value))
        for path, arg, value in self.embeddings:
            role = self.roles[arg]
            short = path.split(".", 1)[1] if "." in path else path
            out.append(Source(f"{role.name} (via {short})", role, arg, value, embedding=path))
        return out

    def unembedded_tokens(self) -> list[int]:
        used = {arg for _, arg, _ in self.embeddings}
        return [i for i in self._token_args if i not in used]

    # -- dependencies ----------------------------------------------------------------------
    def dependencies(self, reference, rtol: float = RTOL, batched: bool | None = None
                     ) -> DependencyResult:
        result = DependencyResult(self.B, self.T)
        outputs = [(label, get(reference, path)) for label, path in self.paths]
        if not outputs:
            result.reason = f"no output has a batch axis (an axis of size B={self.B})"
            return result
        axes = [axes_of(t.shape, self.dims) for _, t in outputs]
        sources = self.sources()
        if sources:
            rows: list[tuple[int, Tensor]] = []
            spans: list[tuple[slice, slice | None]] = []
            for k, ((_, t), ax) in enumerate(zip(outputs, axes)):
                by_sample = self.rows(rows, k, t, ax, "batch")
                by_time = self.rows(rows, k, t, ax, "time") if ax.time else None
                spans.append((by_sample, by_time))
            try:
                reduced = self._source_rows(sources, rows, batched)
            except RuntimeError as exc:
                if not _autograd_refused(exc):
                    raise
                reduced = None  # an in-place write autograd refuses: changed one row at a time
            if reduced is None:
                for src in sources:
                    if src.embedding is None:
                        result.pairs.extend(self._perturbation_pairs(
                            src.arg, outputs, axes, max(rtol, PERTURBED_RTOL)))
                sources = []
                reduced = []
            for src, red in zip(sources, reduced):
                for (label, _), (by_sample, by_time) in zip(outputs, spans):
                    batch = normalise(red[by_sample].sum(2)) if src.role.batch is not None else None
                    time = (normalise(red[by_time].sum(1))
                            if by_time is not None and src.role.time is not None else None)
                    result.pairs.append(Dependency(label, src.name, src.role.stream, batch, time, rtol))
        for arg in self.unembedded_tokens():
            result.pairs.extend(self._perturbation_pairs(arg, outputs, axes, rtol))
        return result

    def confirm(self, dep: DependencyResult, reference) -> None:
        """What autograd cannot see: a dependency through ``torch.no_grad()`` or ``.detach()``
        (a batch mean or a sequence maximum taken as a stop-gradient constant). The last sample,
        then the last position, of each floating input is changed, and an output of another
        sample (or of an earlier position) that changes is a dependency, added to ``dep``.
        Two forwards per input; run only when the module is deterministic, so that a change
        can only come from the input."""
        outputs = [(label, get(reference, path)) for label, path in self.paths]
        for src in self.sources():
            if src.embedding is not None:
                continue
            role = src.role
            for kind, axis, n in (("batch", role.batch, self.B), ("time", role.time, self.T)):
                if axis is None or (kind == "time" and role.stream != "query"):
                    continue
                if src.value.dim() <= axis or src.value.shape[axis] != n:
                    continue
                changed = src.value.clone()
                index = [slice(None)] * changed.dim()
                index[axis] = n - 1
                changed[tuple(index)] += 1.0 + changed[tuple(index)].abs()
                args = list(self.args)
                args[src.arg] = changed
                with torch.no_grad():
                    out = self.call(args)
                for (label, ref), (_, path) in zip(outputs, self.paths):
                    got = get(out, path)
                    if got.shape != ref.shape:
                        continue
                    delta = (got - ref).abs().nan_to_num(0.0, 0.0, 0.0)
                    ax = axes_of(ref.shape, self.dims)
                    if kind == "time" and not ax.time:
                        continue
                    index_r, n_rows = group_index(delta.shape, ax, kind, self.B, self.T)
                    if n_rows != n:
                        continue
                    per_row = torch.zeros(n, dtype=torch.float64).scatter_add_(  # float64 whatever the
                        0, index_r.reshape(-1), delta.reshape(-1).to(torch.float64))  # module made
                    per_row = normalise(per_row)
                    pair = next((p for p in dep.pairs if p.output == label and p.source == src.name),
                                None)
                    if pair is None:
                        continue
                    strength = pair.batch_strength if kind == "batch" else pair.time_strength
                    if strength is None or strength.shape != (n, n):
                        continue
                    # only what autograd found nothing for, so the grid keeps its strengths
                    unseen = (strength[:, n - 1] <= pair.rtol) & (per_row > pair.rtol)
                    strength[:, n - 1] = torch.where(unseen, per_row, strength[:, n - 1])

    def rows(self, rows: list, k: int, t: Tensor, ax: Axes, kind: str) -> slice:
        """Append the cotangent rows of output ``k`` grouped by ``kind``; return their span."""
        start = len(rows)
        cotangents = _cotangents(t.shape, ax, kind, self.B, self.T, self.gen, t.dtype)
        rows.extend((k, row) for row in cotangents)
        return slice(start, len(rows))

    def leaves(self, sources: list[Source]) -> tuple[list[Tensor], list[Any], list[Tensor]]:
        """Leaf tensors for the sources, the positional args and the embedding substitutes
        (non-leaf copies of the leaves, so that in-place ops on them are allowed)."""
        leaves = [s.value.clone().requires_grad_() for s in sources]
        args = list(self.args)
        emb = []
        for s, leaf in zip(sources, leaves):
            if s.embedding is None:
                args[s.arg] = leaf  # call() and the recorded runs pass a copy
            else:
                emb.append(leaf.clone())
        return leaves, args, emb

    def _source_rows(self, sources: list[Source], rows, batched: bool | None) -> list[Tensor]:
        """One forward with the sources as leaves, then one backward per cotangent row."""
        leaves, args, emb = self.leaves(sources)
        with torch.enable_grad(), self.embedding("replace", emb), SavedBytes() as saved:
            out = self.call(args)
        outs = [get(out, path) for _, path in self.paths]
        grads = row_grads(outs, leaves, rows, batched, graph=saved.total)
        return [reduce_grad(g, s.role.batch, s.role.time) for s, g in zip(sources, grads)]

    def _perturbation_pairs(self, arg: int, outputs, axes, rtol) -> list[Dependency]:
        """A token input read without nn.Embedding, or any input of a module autograd cannot
        follow (an in-place write into a view): change one token, or one row, at a time."""
        role = self.roles[arg]
        tokens = self.args[arg]
        codes = role.tokens  # integers, or whole numbers held as floats: changed within range
        floats = tokens.is_floating_point() and not codes
        high = 2 if floats else max(int(tokens.max()) + 1, 2)
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
                if floats:
                    changed[tuple(index)] += 1.0 + changed[tuple(index)].abs()
                else:
                    changed[tuple(index)] = (changed[tuple(index)] + 1) % high
                args = list(self.args)
                args[arg] = changed
                with torch.no_grad():
                    out = self.call(args)
                for k, ((_, path), ax) in enumerate(zip(self.paths, axes)):
                    delta = (get(out, path) - outputs[k][1]).abs().nan_to_num(0.0, 0.0, 0.0)
                    index_b, n_b = group_index(delta.shape, ax, "batch", self.B, self.T)
                    by_sample[k][:, bi] += torch.zeros(n_b, dtype=torch.float64).scatter_add_(
                        0, index_b.reshape(-1), delta.reshape(-1).to(torch.float64))
                    if by_time[k] is not None:
                        index_t, n_t = group_index(delta.shape, ax, "time", self.B, self.T)
                        by_time[k][:, ti] += torch.zeros(n_t, dtype=torch.float64).scatter_add_(
                            0, index_t.reshape(-1), delta.reshape(-1).to(torch.float64))
        return [Dependency(label, role.name, role.stream,
                           normalise(b) if role.batch is not None else None,
                           normalise(t) if t is not None and role.time is not None else None, rtol)
                for (label, _), b, t in zip(outputs, by_sample, by_time)]


#: how much of the strongest dependency a row changed whole must move another row's output to
#: count, where no gradient can be had: a statistic of the whole batch that only sets an
#: iteration's starting scale (a pseudo-inverse's) moves the others by about 1%, a real mixing
#: by as much as the row's own
PERTURBED_RTOL = 0.05


def _autograd_refused(exc: RuntimeError) -> bool:
    """Whether autograd refused the module's own in-place write: into one of several views a
    function returned, or a leaf's view (a write it runs without gradients), or into a tensor a
    backward needs (``x /= x.norm(...)``: the forward runs, and cannot be differentiated)."""
    text = str(exc).replace("in-place", "inplace")
    return "inplace" in text and ("view" in text or "modified by an inplace operation" in text)


# ---------------------------------------------------------------------------------------------
# Gradients by rows
# ---------------------------------------------------------------------------------------------


#: the memory one vmap-batched backward may take, its rows together: more rows run in turns
BATCHED_BYTES = 1 << 30


class SavedBytes:
    """While entered, the bytes autograd keeps for the backward of what runs (each tensor as
    often as it is saved): the size of the graph that one backward pass walks."""

    def __init__(self) -> None:
        self.total = 0
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack)

    def _pack(self, t: Tensor) -> Tensor:
        self.total += t.numel() * t.element_size()
        return t

    def __enter__(self) -> "SavedBytes":
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)


def _unpack(t: Tensor) -> Tensor:
    return t


def row_grads(outputs: Sequence[Tensor], leaves: Sequence[Tensor], rows: Sequence[tuple[int, Tensor]],
              batched: bool | None = None, graph: int = 0) -> list[Tensor]:
    """For each leaf, (len(rows), *leaf.shape): the gradient of row r, which is a cotangent
    ``rows[r][1]`` on output ``rows[r][0]``.

    ``batched=None`` picks: autograd's vmap-batched backward (one pass for all rows) when the
    modules it needs are already loaded, else one scalar backward pass per row. The first
    batched backward in a process imports sympy and torch's symbolic-shape machinery (0.4 s;
    ``torch.func.vmap`` imports torch._dynamo, 1 s), far more than the whole check costs.
    A batched pass holds what one backward holds once per row: with ``graph``, the bytes the
    forward saved (:class:`SavedBytes`), the rows go in turns of at most
    :data:`BATCHED_BYTES` together (a 12-layer encoder at 257 tokens saves about a gigabyte).
    """
    if batched is None:
        batched = batched_grad_loaded()
    if batched and rows:
        turn = max(1, BATCHED_BYTES // graph) if graph else max(1, len(rows))
        try:
            parts = [_batched_grads(outputs, leaves, rows[start:start + turn])
                     for start in range(0, len(rows), turn)]
            return [torch.cat([part[j] for part in parts]) if len(parts) > 1 else parts[0][j]
                    for j in range(len(leaves))]
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


def _batched_grads(outputs: Sequence[Tensor], leaves: Sequence[Tensor],
                   rows: Sequence[tuple[int, Tensor]]) -> list[Tensor]:
    """:func:`row_grads` of ``rows`` in one vmap-batched backward pass."""
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


# ---------------------------------------------------------------------------------------------
# Copies, runs and outputs
# ---------------------------------------------------------------------------------------------
