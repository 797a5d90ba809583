"""Locating a leak: the first op whose output leaks, found on a recorded run of the probe.

The run is recorded by the tracer (``record.tracer.Recorder``, value probes off): each op at
the level the user wrote it, with its name, module path and source site, as an
:class:`~shapetrace.base.records.OpRecord`. The tracer keeps no tensors, so an observer keeps a
snapshot (a clone, in the autograd graph when gradients are on) of each op's outputs, keyed by
the record's index.

For a dependency leak the ops' outputs are differentiated in the order the ops were called
(an op that runs others, such as ``F.multi_head_attention_forward``, comes before them) and the
first one that leaks is named: an axis of size B is the batch axis, axes of size T are time
axes, and an element at time coordinates (t1, t2, ...) may depend on input positions up to
max(t1, t2, ...) (so (B, H, T, T) scores are legal before masking); an output with no time axis
that depends on more than one position leaks. For position-in-batch and nondeterminism leaks
the module runs twice (reordered batch / same inputs) and the first op whose outputs disagree is
named.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..base.ops import MOVES, OVERWRITES, PICKS, UNINITIALISED, base_name, reduced_axes
from ..base.records import OpRecord, TraceData
from ..base.source import display_path, resolve_site
from ..record.tracer import Recorder
from .probe import Axes, Probe, SavedBytes, axes_of, normalise, reduce_grad, row_grads
from .results import PERMUTATION_RTOL, RTOL
from .runs import fresh, math_sdpa, relative_change, same


@dataclass
class Step:
    """One recorded op and snapshots of the tensors it returned."""

    rec: OpRecord
    outputs: list[Tensor]


@dataclass
class Run:
    """A recorded run of the probe: every record, and the steps that returned tensors."""

    records: list[OpRecord]
    steps: list[Step]
    output: Any = None  # what the module returned
    #: a module class -> the user's lines that called a module of it (``TraceData.module_calls``)
    calls: dict | None = None
    saved: int = 0  # the bytes the run saved for backward, with gradients (``probe.SavedBytes``)


@dataclass
class Reader:
    """A check that reads values from one recorded run (no gradients) that other checks read
    too: ``keep(rec, outs, args, kwargs)`` sees every op as it runs (to keep what no record
    holds: the operands an addition or a product took, the tables read), and ``judge(run)``
    returns the check's findings once the run is over."""

    keep: Callable[[OpRecord, tuple, tuple, dict], None]
    judge: Callable[[Run], list]


@dataclass
class Leak:
    """The first op whose output leaks."""

    rec: OpRecord
    kind: str  # "batch" | "causal"
    used: Tensor | None  # the op output's (B, B) or (T, T) dependency grid, when it has the axes


def record(probe: Probe, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None, *,
           grad: bool, embeddings: Sequence[Tensor] = (), also=None, restore: bool = True) -> Run:
    """Run the probe once under the tracer; with ``grad`` the snapshots stay in the graph.
    ``embeddings`` replace the token embeddings, in order; ``also(rec, outs, args, kwargs)``
    sees every op as well (to keep some of its inputs). ``restore=False``: the weights as a
    check set them, not as taken."""
    args, kwargs = fresh(args), fresh(probe.kwargs if kwargs is None else kwargs)
    outputs: dict[int, list[Tensor]] = {}

    def keep(rec: OpRecord, outs: tuple, op_args: tuple, op_kwargs: dict) -> None:
        outputs[rec.index] = snapshot(outs)
        if also is not None:
            also(rec, outs, op_args, op_kwargs)

    trace = TraceData(probe.dims)
    recorder = Recorder(trace, probe.model, root=probe.root, probes=False, observer=keep)
    context = torch.enable_grad() if grad else torch.no_grad()
    replaced = probe.embedding("replace", embeddings) if embeddings else nullcontext()
    with context, replaced, math_sdpa(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.restore_state(weights=restore)
        with recorder, SavedBytes() as saved:
            out = probe.model(*args, **kwargs)
    steps = [Step(rec, outputs[rec.index]) for rec in trace.records if rec.index in outputs]
    return Run(trace.records, steps, out, trace.module_calls, saved.total if grad else 0)


def snapshot(outs: Sequence[Tensor]) -> list[Tensor]:
    """Clones of an op's outputs: a later in-place op must not change what this op produced."""
    return [t.clone() for t in outs]


def dependency_leak(probe: Probe, *, batch: bool, causal: bool, rtol: float = RTOL,
                    batched: bool | None = None) -> tuple[Leak | None, Run | None]:
    """The first op whose output mixes samples (``batch``) or sees the future (``causal``),
    and the recorded run it was found in."""
    sources = probe.sources()
    if not sources:
        return None, None
    leaves, args, emb = probe.leaves(sources)
    run = record(probe, args, grad=True, embeddings=emb)
    kinds = (["batch"] if batch else []) + (["time"] if causal else [])
    lengthened: set[int] = set()  # sizes of time axes made longer (cached keys + new ones)
    for step in run.steps:
        lengthened |= _lengthened_sizes(step.rec, probe.dims)
        for t in step.outputs:
            if not (t.is_floating_point() and t.requires_grad):
                continue
            ax = axes_of(t.shape, probe.dims)
            rows: list[tuple[int, Tensor]] = []
            judged = [k for k in kinds if k != "time" or not lengthened.intersection(t.shape)]
            spans = {kind: probe.rows(rows, 0, t, ax, kind) for kind in judged}
            if not spans:
                continue
            try:
                grads = row_grads([t], leaves, rows, batched, graph=run.saved)
            except RuntimeError:  # no path from the leaves to this output
                continue
            for s, g in zip(sources, grads):
                red = reduce_grad(g, s.role.batch, s.role.time)
                if "batch" in spans and s.role.batch is not None:
                    used = normalise(red[spans["batch"]].sum(2)) > rtol
                    if _mixes_samples(used, ax):
                        return Leak(_merged_mixer(run.records, step.rec, probe.B) or step.rec,
                                    "batch", used if ax.batch is not None else None), run
                if "time" in spans and s.role.stream == "query" and s.role.time is not None:
                    used = normalise(red[spans["time"]].sum(1)) > rtol
                    if _sees_future(used, ax, _drops_time(step.rec, probe.T)):
                        return Leak(step.rec, "causal", used if ax.time else None), run
    return None, run


def _merged_mixer(records: list[OpRecord], rec: OpRecord, batch: int) -> OpRecord | None:
    """For a layout op where mixed samples first show (``attention.view(H, B, -1, d)``: it
    cannot mix them itself), the op before it that reduced or normalised over an axis holding the
    batch merged with another (a softmax over (H*B, T, S)'s first axis): the samples were mixed
    there, out of sight. None when ``rec`` is not a layout op or no such op feeds it."""
    if rec.op not in MOVES:
        return None
    stack = [m.src[0] for m in rec.inputs if m.src is not None]
    seen: set[int] = set()
    while stack and len(seen) < 200:
        index = stack.pop()
        if index in seen or not 0 <= index < len(records):
            continue
        seen.add(index)
        made = records[index]
        found = reduced_axes(made)
        if found is not None and made.inputs:
            shape = made.inputs[0].shape
            if any(a < len(shape) and shape[a] > batch and shape[a] % batch == 0 for a in found[0]):
                return made
        stack.extend(m.src[0] for m in made.inputs if m.src is not None)
    return None


def first_difference(probe: Probe, *, order: Tensor | None = None,
                     reordered: tuple[Sequence[Any], Mapping[str, Any]] | None = None
                     ) -> OpRecord | None:
    """The first op whose outputs differ between two runs: on the same inputs, or on the batch
    reordered by ``order`` (new sample i is old sample ``order[i]``), whose positional and
    keyword inputs are ``reordered``; outputs are compared reordered back."""
    first = record(probe, probe.args, grad=False)
    if order is not None and reordered is not None:
        second = record(probe, reordered[0], reordered[1], grad=False)
    else:
        second = record(probe, probe.args, grad=False)
    uninitialised: set[int] = set()  # ops whose values come from memory never written
    fallback = None
    for a, b in _paired(first, second):
        rec = a.rec
        read = rec.inputs[1:] if rec.op in OVERWRITES else rec.inputs  # not the memory written
        if rec.op in UNINITIALISED or any(m.src is not None and m.src[0] in uninitialised
                                          for m in read):
            uninitialised.add(rec.index)
        for ta, tb in zip(a.outputs, b.outputs):
            if order is not None:
                axis = next((i for i, s in enumerate(ta.shape) if s == probe.B), None)
                if axis is None:
                    continue
                if relative_change(tb, ta.index_select(axis, order)) > PERMUTATION_RTOL:
                    return rec
            elif not same(ta, tb):
                if rec.index not in uninitialised:
                    return rec
                fallback = fallback or rec  # torch.empty differs by nature: a random op first
    return fallback


_TILES = frozenset({"Tensor.repeat", "torch.tile", "Tensor.tile"})


def first_cross_sample_change(probe: Probe, arg: int, sample: int, changed: Tensor
                              ) -> OpRecord | None:
    """Where a change to one sample of an integer or boolean input (``arg``, replaced by
    ``changed``) reaches other samples: a ``repeat``/``tile`` that spreads the changed sample
    over rows strided by B (``valid_lens.repeat(H)``, where the rows are sample-major), else the
    first op with a batch axis whose output changes in a sample other than ``sample``."""
    args = list(probe.args)
    args[arg] = changed
    first = record(probe, probe.args, grad=False)
    second = record(probe, args, grad=False)
    others = torch.tensor([i for i in range(probe.B) if i != sample])
    for a, b in _paired(first, second):
        for ta, tb in zip(a.outputs, b.outputs):
            if a.rec.op in _TILES and _strided_change(ta, tb, probe.B):
                return a.rec
            axis = axes_of(ta.shape, probe.dims).batch
            if axis is None or not (ta.is_floating_point() or ta.dtype == torch.bool):
                continue
            if not same(ta.index_select(axis, others), tb.index_select(axis, others)):
                return a.rec
    return None


def _strided_change(ta: Tensor, tb: Tensor, B: int) -> bool:
    """Rows of a (k*B, ...) output that changed are strided (i mod B), not one block."""
    if ta.dim() == 0 or ta.shape[0] <= B or ta.shape[0] % B:
        return False
    rows = (ta != tb).reshape(ta.shape[0], -1).any(dim=1).nonzero().flatten().tolist()
    return len(rows) > 1 and rows[-1] - rows[0] + 1 != len(rows)


def _paired(first: Run, second: Run):
    """The steps of two runs side by side, up to the first that is not the same op and shapes."""
    for a, b in zip(first.steps, second.steps):
        if a.rec.op != b.rec.op or len(a.outputs) != len(b.outputs):
            return
        if any(ta.shape != tb.shape for ta, tb in zip(a.outputs, b.outputs)):
            return
        yield a, b


def _mixes_samples(used: Tensor, ax: Axes) -> bool:
    """``used`` is (rows, B_in): rows are samples, or one row when the output has no batch axis."""
    if ax.batch is not None:
        return bool((used & ~torch.eye(*used.shape, dtype=torch.bool)).any())
    if ax.batch_merged:
        return False  # (B*H, ...) layouts: the samples cannot be told apart here
    return int(used.any(dim=0).sum()) > 1


def _sees_future(used: Tensor, ax: Axes, drops_time: bool) -> bool:
    """``used`` is (rows, T_in): rows are latest time coordinates, or one row without a time axis.

    Without a time axis, an output that depends on several positions leaks only when the op
    itself removed the time axis other than by picking positions: ``x.mean(dim=1)`` leaks,
    ``x[:, -1]`` (the last position sees them all) and the ops after it do not."""
    if ax.time:
        return bool(used.triu(1).any())
    if ax.time_merged or not drops_time:
        return False
    return int(used.any(dim=0).sum()) > 1


def _drops_time(rec: OpRecord, T: int) -> bool:
    """The op took a tensor with a time axis and does not merely pick positions from it, nor
    lengthen that axis: a ``cat`` of cached keys before the new ones (S + T), a left ``F.pad``
    (T + 2) or a convolution padded on both sides keeps the positions along an axis no longer
    of size T, where they cannot be told apart; the op that brings the axis back to T is
    judged instead. An ``F.pad`` that adds slots after the last position is still judged: that
    is what lets a convolution over it see later positions (``F.pad(h, (1, 1))``)."""
    if base_name(rec.op) in PICKS:
        return False
    timed = [meta.shape for meta in rec.inputs if T in meta.shape]
    if not timed:
        return False
    if _pads_after_time(rec, T):
        return True
    return not any(_lengthens_time(shape, out.shape, T) for shape in timed for out in rec.outputs)


def _pads_after_time(rec: OpRecord, T: int) -> bool:
    """``F.pad`` with slots added after the last position of a time axis of its input."""
    if rec.op != "F.pad" or not rec.inputs:
        return False
    pad, shape = rec.arg(1, "pad"), rec.inputs[0].shape
    if not isinstance(pad, (tuple, list)):
        return False
    for axis, size in enumerate(shape):
        after = 2 * (len(shape) - 1 - axis) + 1
        if size == T and after < len(pad) and isinstance(pad[after], int) and pad[after] > 0:
            return True
    return False


def _lengthened_sizes(rec: OpRecord, dims) -> set[int]:
    """Sizes of the axes this op made by lengthening a time axis, when no named dimension has
    that size: positions lie along such an axis (the S + T keys after a cache, T + 2 after a
    pad) but which is which is unknown, so an output with one is not judged for the future:
    (T, S + T) scores are legal before masking like (T, T) ones. A size a named dimension has
    is left out (it could be heads or features, which must stay judged)."""
    T = dims["T"]
    sizes: set[int] = set()
    if _pads_after_time(rec, T):
        return sizes  # judged as it is (``_drops_time``)
    for meta in rec.inputs:
        if T not in meta.shape:
            continue
        for out in rec.outputs:
            if len(out.shape) == len(meta.shape):
                sizes.update(a for b, a in zip(meta.shape, out.shape)
                             if b == T and a > T and dims.label(a) == str(a))
    return sizes


def _lengthens_time(before: Sequence[int], after: Sequence[int], T: int) -> bool:
    """``after`` has ``before``'s axes, with an axis of size T grown longer."""
    return len(before) == len(after) and any(b == T and a > T for b, a in zip(before, after))


def called_at(probe: Probe, run: Run, rec: OpRecord) -> tuple[str | None, int | None]:
    """The line of the module's own forward that called the sublayer ``rec`` ran in (``x =
    self.ff(self.norm2(x))``), when one line did; else ``(None, None)``."""
    path = (rec.module or "").split(".")
    if len(path) < 2 or path[0] != probe.root or not run.calls:
        return None, None
    try:
        child = probe.model.get_submodule(path[1])
    except AttributeError:
        return None, None
    own = {vars(k)["forward"].__code__ for k in type(probe.model).__mro__
           if callable(vars(k).get("forward")) and hasattr(vars(k)["forward"], "__code__")}
    sites = {site for site in run.calls.get(type(child), ()) if site[0] in own}
    if len(sites) != 1:  # two layers of one class: the one line that calls this one by name
        return _called_by_name(own, path[1])
    code, lasti = next(iter(sites))
    file, line, _, _ = resolve_site(code, lasti)
    return (display_path(file) if file else None), line


def _called_by_name(codes, name: str) -> tuple[str | None, int | None]:
    """The one line of the forwards ``codes`` that calls ``self.<name>(...)``, or Nones."""
    import ast

    from ..analysis.code import parsed

    found = set()
    for code in codes:
        tree = parsed(code)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == name and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "self":
                found.add((code.co_filename, code.co_firstlineno + node.lineno - 1))
    if len(found) != 1:
        return None, None
    file, line = found.pop()
    return display_path(file), line
