"""weight-without-effect for parts of a weight: only the diagonal, or only some heads, of a
weight matrix reach the output.

The gradients ``reach`` takes of every weight matrix say more than "some gradient": a square
weight whose gradient is exactly zero off its diagonal and non-zero on it (``w * torch.eye(n)``,
an einsum that repeats an index) is used as a diagonal; a projection whose rows fall into parts
of H heads of size d (one for q, k and v each, in a fused one) and whose gradient is exactly
zero on the same heads in every part while other heads have some (``y[:, 0]`` keeping head 0)
drops those heads; a learned table (a relative-position bias table) that the forward reads only
through an index fixed when the module was built (a buffer or tensor kept on a module, read
whole: no slice of it by the input's length), an index of a window's relative offsets
(square, one row for each token with itself, opposite offsets symmetric about it), and whose
other rows have a gradient of exactly zero has rows that no input can ever reach (the offsets
of a window flattened with the wrong strides share rows). Only these shapes of a part are judged: a table indexed by the input's
tokens or positions (rows past the probe's length or vocabulary), distances clipped to a range
the probe's length does not fill (the unread rows at both ends, as many each), a padding row,
a half of a projection used for something else (the log-variance of an encoder in eval), a
triangle of a causal mixing matrix, are not.

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
from ..base.compat import held_tensors
from ..record.tensors import holds_integers, tensors_in
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
        table = None
        if part is None:
            table = _rows(g, _padding_row(probe.model, name))
            if table is None:
                continue
            part = table[0], ""
        zero, what = part
        delta = torch.randn(param.shape, generator=gen, dtype=param.dtype) \
            * (float(param.detach().abs().mean()) or 1.0) * zero
        read = _collapse(probe, param, delta, fixed_index=table is not None)
        if read is None:
            continue
        rec, index = read  # through a fixed index (its name, the tensor kept) for a table
        if table is None:
            found.append(_finding(name, what, rec))
        elif _of_offsets(index[1]):
            found.append(_table_finding(name, table[1], g.shape[0], index[0], rec,
                                        _made(probe, index[1])))
    return found


def _of_offsets(index: Tensor) -> bool:
    """Whether ``index`` is a table of relative offsets made the way a window's are: square
    (n, n) (or flattened so), the same row for every token with itself, and rows that go up
    for an offset by what they go down for its opposite (``index[i, j] + index[j, i]`` twice
    the diagonal's), as a flattening of offsets by strides makes them. Buckets that grow
    slower with distance (T5's), a table with extra rows for a class token, and any index
    of another kind are not judged."""
    n = int(round(index.numel() ** 0.5))
    if n < 2 or n * n != index.numel():
        return False
    square = index.detach().reshape(n, n).to(torch.int64)
    centre = square[0, 0]
    return bool((square.diagonal() == centre).all()) and bool((square + square.t() == 2 * centre).all())


def _made(probe: Probe, index: Tensor):
    """The constructor's line that made the values of ``index`` (``record.built``), or None."""
    flat = index.detach().flatten()
    for made in probe.built_indices:
        value = made.value
        if value.numel() == flat.numel() and value.dtype == flat.dtype \
                and torch.equal(value.flatten(), flat):
            return made
    return None


def _padding_row(model: torch.nn.Module, name: str) -> int | None:
    """The padding row of an ``nn.Embedding`` weight (never trained, by design), or None."""
    owner, _, leaf = name.rpartition(".")
    try:
        module = model.get_submodule(owner)
    except AttributeError:
        return None
    padding = getattr(module, "padding_idx", None) if leaf == "weight" else None
    return padding if isinstance(padding, int) else None


def _rows(g: Tensor, padding: int | None) -> tuple[Tensor, list[int]] | None:
    """``(mask of the rows whose gradient is zero, the rows that have one)`` of a table some of
    whose rows have a gradient and some none; None for every row or none, and for the rows of
    clipped distances: one run of rows in the middle, as many unread on each side."""
    live = g.ne(0).any(1)
    if padding is not None and -len(live) <= padding < len(live):
        live[padding] = True  # a padding row is never trained, by design
    if bool(live.all()) or not bool(live.any()):
        return None
    rows = live.nonzero().flatten().tolist()
    first, last = rows[0], rows[-1]
    if len(rows) == last - first + 1 and first == len(live) - 1 - last:
        return None
    return (~live).reshape(-1, *([1] * (g.dim() - 1))).expand(g.shape).to(g.dtype), rows


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


def _collapse(probe: Probe, param: Tensor, delta: Tensor,
              fixed_index: bool = False) -> tuple[OpRecord, tuple | None] | None:
    """``(the first op that reads a value delta changes and returns one it does not, the
    fixed index it read the weight through)``; None when the outputs change (the part does
    reach them) or no such op is found. ``fixed_index``: only an op that reads the weight
    through an index fixed when the module was built (``_run``) counts."""
    before = _run(probe, param, None)
    if before is None or fixed_index and not before[3]:
        return None
    after = _run(probe, param, delta)
    if after is None or len(before[0]) != len(after[0]):
        return None
    (steps_a, reads, out_a, fixed), (steps_b, _, out_b, _) = before, after
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
            if fixed_index and sa.rec.index not in fixed:
                return None
            return sa.rec, fixed.get(sa.rec.index)
    return None


def _run(probe: Probe, param: Tensor, delta: Tensor | None):
    """(steps, indices of the ops that read ``param``, outputs, fixed reads) of one recorded
    run, with ``delta`` added to ``param`` for the run (recorded here, not by
    ``locate.record``, which puts the module's state back first). ``fixed reads``: op index ->
    ``(name, tensor)`` of the index it read ``param`` through, for the ops whose every integer operand
    is an integer tensor kept on a module (a buffer), whole: viewed, reshaped or converted,
    never cut (an index cut by the input's length reads rows that depend on it)."""
    reads: set[int] = set()
    outputs: dict[int, list[Tensor]] = {}
    whole = _kept_indices(probe.model)  # id -> (tensor, its name): kept alive for the run
    fixed: dict[int, tuple[str, Tensor]] = {}

    def keep(rec: OpRecord, outs: tuple, op_args: tuple, op_kwargs: dict) -> None:
        outputs[rec.index] = locate.snapshot([t for t in outs if isinstance(t, Tensor)])
        operands = list(tensors_in((op_args, op_kwargs)))
        indices = [t for t in operands if holds_integers(t)]
        if any(t is param for t in operands):
            reads.add(rec.index)
            if indices and all(id(t) in whole and whole[id(t)][0] is t for t in indices):
                fixed[rec.index] = whole[id(indices[0])][1:]
        elif len(operands) == 1 and indices and id(indices[0]) in whole \
                and whole[id(indices[0])][0] is indices[0]:
            name, kept = whole[id(indices[0])][1:]
            for t in outs:
                if isinstance(t, Tensor) and holds_integers(t) and t.numel() == indices[0].numel():
                    whole[id(t)] = (t, name, kept)

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
    return steps, reads, out, fixed


def _kept_indices(model: torch.nn.Module) -> dict[int, tuple[Tensor, str, Tensor]]:
    """The integer tensors kept on the model's modules (buffers, plain attributes), by id:
    ``(the tensor, its name, the tensor kept)`` (the last differs in what is made from it)."""
    return {id(t): (t, f"{path}.{key}" if path else key, t)
            for path, module in model.named_modules() for key, t in held_tensors(module)
            if holds_integers(t)}


def _table_finding(name: str, rows: list[int], count: int, index: str, rec: OpRecord, made=None):
    """At the constructor's line that made the index (``made``), when known; the read is where
    it is used."""
    at = f" (made at {made.file}:{made.line})" if made is not None else ""
    read = f"the index `{index}`, fixed when the module was built{at},"
    message = (f"`{name}`: only {len(rows)} of its {count} rows ({_ranges(rows)}) can move the "
               f"output: {read} selects no other row at any input, so the rest of the table has "
               f"a gradient from the outputs of exactly zero, and changing it leaves every output "
               f"as it was; `{rec.source or rec.op}` at {rec.file}:{rec.line} reads the table "
               f"through it")
    hint = ("an index built once (a relative-position index) that reaches only some rows maps "
            "different offsets to one row: flatten each offset with the span of every axis after "
            "it as its stride (row = (dy + h - 1) * (2 * w - 1) + dx + w - 1), or make the table "
            "only as large as what the index reaches")
    return diagnostic("weight-without-effect", message, hint, rec=rec, weights=[name],
                      end="part", made_at=(made.file, made.line) if made is not None else None)


def _ranges(rows: list[int]) -> str:
    """``0-4, 7, 9-12``: sorted row numbers as runs."""
    runs, start = [], rows[0]
    for a, b in zip(rows, rows[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    shown = ", ".join(runs[:6])
    return shown + (", ..." if len(runs) > 6 else "")


def _finding(name: str, what: str, rec: OpRecord):
    message = (f"`{name}`: {what} can move the output; the rest of its entries have a gradient "
               f"from the outputs of exactly zero, and changing them leaves every output as it "
               f"was: `{rec.source or rec.op}` at {rec.file}:{rec.line} reads a value that "
               f"depends on them and returns one that does not")
    hint = ("use the whole weight (every head's result, every entry of the matrix), or make the "
            "parameter only as large as the part that is used")
    return diagnostic("weight-without-effect", message, hint, rec=rec, weights=[name],
                      end="part")
