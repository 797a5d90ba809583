"""weight-without-effect for parts of a weight: only the diagonal, or only some heads, of a
weight matrix reach the output.

The gradients ``reach`` takes of every weight matrix say more than "some gradient": a square
weight whose gradient is exactly zero off its diagonal and non-zero on it (``w * torch.eye(n)``,
an einsum that repeats an index) is used as a diagonal; a projection whose rows fall into parts
of H heads of size d (one for q, k and v each, in a fused one) and whose gradient is exactly
zero on the same heads in every part while other heads have some (``y[:, 0]`` keeping head 0)
drops those heads. Only these two shapes of a part are judged: a table indexed by positions or
tokens (rows past the probe's length or vocabulary), a half of a projection used for something
else (the log-variance of an encoder in eval), a triangle of a causal mixing matrix, are not.

A part is confirmed when changing its values leaves every output as it was. The finding is at
the op that read a value depending on the part and returned one that does not (the product with
the identity, the index that kept one head), found by comparing each op's outputs between a run
with the part changed and one without.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from ..base.records import OpRecord, TraceData
from ..record.tensors import tensors_in
from ..record.tracer import Recorder
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe
from .results import RTOL
from .runs import flatten, fresh, math_sdpa, relative_change


def parts_without_effect(probe: Probe, params: dict[str, Tensor],
                         grads: dict[str, Tensor | None]) -> list:
    """Findings for weights of which only a diagonal or only some heads reach the output."""
    found = []
    gen = torch.Generator().manual_seed(3)
    for name, param in params.items():
        g = grads.get(name)
        if g is None or param.dim() != 2 or not bool(g.ne(0).any()):
            continue
        sizes = dict(probe.dims.items()) if hasattr(probe.dims, "items") else {n: probe.dims[n] for n in probe.dims}
        part = _diagonal(g) or _heads(g, sizes.get("H", 0), sizes.get("d", 0)) \
            or _features(g, sizes.get("H", 0), sizes.get("d", 0))
        if part is None:
            continue
        zero, what = part
        delta = torch.randn(param.shape, generator=gen, dtype=param.dtype) \
            * (float(param.detach().abs().mean()) or 1.0) * zero
        rec = _collapse(probe, param, delta)
        if rec is not None:
            found.append(_finding(name, what, rec))
    return found


def _diagonal(g: Tensor) -> tuple[Tensor, str] | None:
    n = g.shape[0]
    if g.shape[0] != g.shape[1] or n < 3:
        return None
    eye = torch.eye(n, dtype=torch.bool)
    if bool(g[~eye].eq(0).all()) and bool(g[eye].ne(0).all()):
        return (~eye).to(g.dtype), f"only its diagonal ({n} of its {n * n} entries)"
    return None


def _heads(g: Tensor, heads: int, size: int) -> tuple[Tensor, str] | None:
    """The rows of the heads whose gradient is zero, when the rows are parts of ``heads``
    heads of ``size`` rows and every part keeps the same heads and drops the same others."""
    rows = g.shape[0]
    width = heads * size
    if heads < 2 or size < 2 or rows % width:
        return None
    live = g.ne(0).any(1).reshape(rows // width, heads, size)
    per_head = live.any(-1)
    if not bool((live.all(-1) == per_head).all()):
        return None  # a head partly used: not a head dropped
    kept = per_head[0]
    if not bool((per_head == kept).all()) or bool(kept.all()) or not bool(kept.any()):
        return None
    zero = (~per_head).repeat_interleave(size, dim=-1).reshape(rows, 1).expand(g.shape)
    names = ", ".join(str(h) for h in kept.nonzero().flatten().tolist())
    parts = f" in each of its {rows // width} parts" if rows > width else ""
    return zero.to(g.dtype), (f"only head{'s' if int(kept.sum()) > 1 else ''} {names} of its "
                              f"{heads} (rows of {size}){parts}")


def _features(g: Tensor, heads: int, size: int) -> tuple[Tensor, str] | None:
    """The rows of the same features of every head whose gradient is zero, when the rows are
    parts of ``heads`` heads of ``size`` rows and, in each part, every head keeps the same
    features and drops the same others (``q[..., -r:]`` where ``q[..., r:]`` was meant: the
    features between never reach the scores). A part that drops none is left as it is (the
    values of a fused projection beside queries and keys that drop some)."""
    rows = g.shape[0]
    width = heads * size
    if heads < 2 or size < 2 or rows % width:
        return None
    live = g.ne(0).any(1).reshape(rows // width, heads, size)
    pattern = live[:, :1, :]
    if not bool((live == pattern).all()) or bool(pattern.all()) or not bool(pattern.any(-1).all()):
        return None
    dropping = ~pattern.all(-1).flatten()  # the parts that drop some features
    kept = [i for i in range(size) if bool(pattern[dropping, 0, i].all())]
    zero = (~live).reshape(rows, 1).expand(g.shape)
    shown = ", ".join(str(i) for i in kept)
    parts = f" in {int(dropping.sum())} of its {rows // width} parts" if rows > width else ""
    return zero.to(g.dtype), (f"only features {shown} of each of its {heads} heads (rows of "
                              f"{size}){parts}")


def _collapse(probe: Probe, param: Tensor, delta: Tensor) -> OpRecord | None:
    """The first op that reads a value ``delta`` changes and returns one it does not; None when
    the outputs change (the part does reach them) or no such op is found."""
    before = _run(probe, param, None)
    after = _run(probe, param, delta)
    if before is None or after is None or len(before[0]) != len(after[0]):
        return None
    (steps_a, reads, out_a), (steps_b, _, out_b) = before, after
    a = [t for _, _, t in flatten(out_a) if t.is_floating_point()]
    b = [t for _, _, t in flatten(out_b) if t.is_floating_point()]
    if len(a) != len(b) or any(x.shape != y.shape or relative_change(y, x) > RTOL for x, y in zip(a, b)):
        return None
    changed: set[tuple[int, int]] = set()  # (op, output slot) of the values delta changed
    for sa, sb in zip(steps_a, steps_b):
        if sa.rec.index != sb.rec.index or sa.rec.op != sb.rec.op:
            return None
        if len(sa.outputs) != len(sb.outputs):
            moved = set(range(len(sa.outputs)))
        else:
            moved = {slot for slot, (x, y) in enumerate(zip(sa.outputs, sb.outputs))
                     if x.shape != y.shape or (x.is_floating_point() and relative_change(y, x) > RTOL)}
        fed = sa.rec.index in reads or any(m.src is not None and m.src in changed
                                           for m in sa.rec.inputs)
        if moved:
            changed |= {(sa.rec.index, slot) for slot in moved}
        elif fed and any(t.is_floating_point() for t in sa.outputs):
            return sa.rec
    return None


def _run(probe: Probe, param: Tensor, delta: Tensor | None):
    """(steps, indices of the ops that read ``param``, outputs) of one recorded run, with
    ``delta`` added to ``param`` for the run (recorded here, not by ``locate.record``, which
    puts the module's state back first)."""
    reads: set[int] = set()
    outputs: dict[int, list[Tensor]] = {}

    def keep(rec: OpRecord, outs: tuple, op_args: tuple, op_kwargs: dict) -> None:
        outputs[rec.index] = locate.snapshot([t for t in outs if isinstance(t, Tensor)])
        if any(t is param for t in tensors_in((op_args, op_kwargs))):
            reads.add(rec.index)

    trace = TraceData(probe.dims)
    recorder = Recorder(trace, probe.model, root=probe.root, probes=False, observer=keep)
    saved = param.detach().clone()
    try:
        with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if delta is not None:
                param.add_(delta)
            with recorder:
                out = probe.model(*fresh(probe.args), **fresh(probe.kwargs))
    except Exception:  # noqa: BLE001 - a module that cannot run changed: not judged
        return None
    finally:
        with torch.no_grad():
            param.copy_(saved)
    steps = [locate.Step(rec, outputs[rec.index]) for rec in trace.records if rec.index in outputs]
    return steps, reads, out


def _finding(name: str, what: str, rec: OpRecord):
    message = (f"`{name}`: {what} can move the output; the rest of its entries have a gradient "
               f"from the outputs of exactly zero, and changing them leaves every output as it "
               f"was: `{rec.source or rec.op}` at {rec.file}:{rec.line} reads a value that "
               f"depends on them and returns one that does not")
    hint = ("use the whole weight (every head's result, every entry of the matrix), or make the "
            "parameter only as large as the part that is used")
    return diagnostic("weight-without-effect", message, hint, rec=rec, weights=[name],
                      end="part")
