"""mask-ignored: a padding mask whose excluded positions still move the output.

A 0/1 ``attention_mask`` (B, T) that shapetrace makes is right-padded as a tokenizer makes it,
and its meaning is the tokenizer's: 1 is a real token, 0 is padding. Whatever the code does with
it, the output at a real position must not depend on the inputs at the padded positions of its
sample. Checked like causal-leak, by autograd: one backward of a random projection of the
outputs at the real positions, and the gradient at the padded inputs must be zero. When it is
not, the first op on a recorded run whose output at a real position depends on a padded input
is named: the weighted sum of an attention that was given an inverted mask or none. Only an
attention is judged (a product whose operand has two position axes, or SDPA): a convolution
or a pooling that mixes positions is a design choice, not a mask that says one thing and does
another.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from ..base.names import PADDING_INPUTS
from ..base.ops import MASKED_FILLS, MATMULS, SDPA, WHERES
from ..base.records import OpRecord
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe, axes_of
from .results import RTOL
from .runs import get

_ATTENTIONS = MATMULS | {SDPA}


def padding_ignored(probe: Probe) -> list:
    """The ``mask-ignored`` finding for a generated padding mask, or nothing."""
    found = _padding_mask(probe) if probe.B != probe.T else None
    if found is None:
        return []
    arg, keep = found
    sources = [s for s in probe.sources() if s.arg != arg and s.role.batch is not None
               and s.role.time is not None and s.role.stream == "query"
               and s.value.shape[s.role.batch] == probe.B and s.value.shape[s.role.time] == probe.T]
    if not sources:
        return []
    leaves, args, emb = probe.leaves(sources)
    with torch.enable_grad(), probe.embedding("replace", emb), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = probe.call(args)
    if not _leaks([get(out, path) for _, path in probe.paths], leaves, sources, keep, probe):
        return []
    rec, applied = _first_leak(probe, args, emb, leaves, sources, keep)
    if rec is None or not _is_attention(rec, probe.T):
        return []
    mask_name = probe.roles[arg].name
    where = f"`{rec.source or rec.op}` at {rec.file}:{rec.line} mixes them in"
    if applied is not None and applied.site is not None:
        where = (f"the mask applied by `{applied.source}` at {applied.file}:{applied.line} leaves "
                 f"the padded keys in the weights that {where}")
    message = (f"`{mask_name}` marks padding with 0 (1 = a real token, as a tokenizer makes it), "
               f"but the output at real positions depends on the inputs at padded positions: "
               f"{where}: the mask is inverted or not applied to these weights")
    hint = ("exclude the positions where the mask is 0: scores.masked_fill(mask[:, None, None, :] "
            "== 0, float('-inf')), or an SDPA bool attn_mask that is True where mask == 1")
    return [diagnostic("mask-ignored", message, hint, rec=applied or rec, mask=mask_name,
                       used_at=rec.line)]


def _padding_mask(probe: Probe) -> tuple[int, Tensor] | None:
    """(argument index, (B, T) bool of real tokens) for a 0/1 padding mask made as a tokenizer
    makes it: each row real tokens first, then padding, some padding somewhere."""
    for i, role in enumerate(probe.roles):
        value = probe.args[i] if i < len(probe.args) else None
        if role is None or role.name not in PADDING_INPUTS or not isinstance(value, Tensor):
            continue
        if value.is_floating_point() or tuple(value.shape) != (probe.B, probe.T):
            continue
        if not bool(((value == 0) | (value == 1)).all()):
            continue
        keep = value == 1
        prefix = keep.long().cumprod(1).bool()
        if bool((prefix == keep).all()) and bool((~keep).any()) and bool(keep[:, 0].all()):
            return i, keep
    return None


def _row_cotangent(t: Tensor, keep: Tensor, probe: Probe, gen) -> Tensor | None:
    """Random values on the elements of ``t`` at real positions, zeros elsewhere; None for an
    output without one batch axis and exactly one position axis."""
    ax = axes_of(t.shape, probe.dims)
    if ax.batch is None or len(ax.time) != 1 or not t.is_floating_point():
        return None
    shape = [1] * t.dim()
    shape[ax.batch], shape[ax.time[0]] = probe.B, probe.T
    real = keep.to(t.dtype)
    if ax.batch > ax.time[0]:
        real = real.t()
    return torch.randn(t.shape, generator=gen, dtype=t.dtype) * real.reshape(shape)


def _leaks(outs, leaves, sources, keep: Tensor, probe: Probe) -> bool:
    gen = torch.Generator().manual_seed(4)
    total = None
    for t in outs:
        if not t.requires_grad:
            continue
        cot = _row_cotangent(t, keep, probe, gen)
        if cot is not None:
            term = (t.nan_to_num(0.0, 0.0, 0.0) * cot).sum()
            total = term if total is None else total + term
    if total is None:
        return False
    grads = torch.autograd.grad(total, leaves, allow_unused=True, retain_graph=True)
    for s, g in zip(sources, grads):
        if g is None:
            continue
        g = g.abs().nan_to_num(0.0, 0.0, 0.0).movedim((s.role.batch, s.role.time), (0, 1))
        per = g.reshape(probe.B, probe.T, -1).sum(-1)
        peak = float(per.max())
        if peak > 0 and float(per[~keep].max()) > RTOL * peak:
            return True
    return False


def _first_leak(probe: Probe, args, emb, leaves, sources, keep: Tensor
                ) -> tuple[OpRecord | None, OpRecord | None]:
    """The first op whose output at a real position depends on a padded input, and the op that
    applied a mask to the weights it sums with (a fill or a select before their softmax)."""
    run = locate.record(probe, args, grad=True, embeddings=emb)
    for step in run.steps:
        outs = [t for t in step.outputs if t.requires_grad]
        if outs and _leaks(outs, leaves, sources, keep, probe):
            return step.rec, _applied(run.records, step.rec, probe.T)
    return None, None


def _applied(records: list[OpRecord], rec: OpRecord, T: int) -> OpRecord | None:
    """The masked_fill / where that made the weights ``rec`` reads, a few ops back."""
    by_index = {r.index: r for r in records}
    frontier = [m for m in rec.inputs if tuple(m.shape).count(T) >= 2]
    for _ in range(6):
        found = []
        for meta in frontier:
            src = by_index.get(meta.src[0]) if meta.src is not None else None
            if src is None:
                continue
            if src.op in MASKED_FILLS or src.op in WHERES:
                return src
            found.extend(m for m in src.inputs if tuple(m.shape).count(T) >= 2)
        frontier = found
    return None


def _is_attention(rec: OpRecord, T: int) -> bool:
    if rec.op == SDPA:
        return True
    return rec.op in MATMULS and any(tuple(m.shape).count(T) >= 2 for m in rec.inputs)
