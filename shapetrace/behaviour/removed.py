"""attention-textbook, one more part: an input whose whole contribution to the scores the
softmax removes.

A softmax is unchanged by a term that is the same for every position it normalises over. An
input that reaches an attention's scores only as such a term (a decoder state summed with each
key's projection by one linear map and never passed through a nonlinearity with them: the
additive score ``v · W[h; e_j]`` without its ``tanh`` splits into ``v·W_h h``, the same for
every key, plus the keys' own part) moves the scores and never the weights: the attention
cannot depend on it. Checked by autograd on one recorded run: for each softmax whose weights a
product takes (an attention), the gradient of its scores and of its weights with respect to
each input; an input the scores depend on and the weights, to rounding, do not is reported at
the softmax. An input that reaches the weights at all, however weakly, is not.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..base.ops import MATMULS, MOVES, MULS, SOFTMAXES, softmax_dim
from ..base.records import OpRecord
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe

#: the weights' gradient, relative to the scores', below which the softmax removed the input
_REMOVED = 1e-10


def inputs_removed(probe: Probe) -> list:
    """The ``attention-textbook`` finding for the first attention whose softmax removes all an
    input adds to its scores; or nothing."""
    sources = probe.sources()
    if len(sources) < 2:  # one input: it makes the keys too, and the weights move with them
        return []
    leaves, args, emb = probe.leaves(sources)
    run = locate.record(probe, args, grad=True, embeddings=emb)  # with gradients, no warnings
    steps = {s.rec.index: s for s in run.steps}
    used = _taken_by_products(run.records)
    gen = torch.Generator().manual_seed(5)
    for step in run.steps:
        rec = step.rec
        if rec.op not in SOFTMAXES or rec.index not in used or not rec.inputs or not step.outputs:
            continue
        scores = _input_value(rec.inputs[0], steps)
        weights = step.outputs[0]
        axis = softmax_dim(rec)
        if scores is None or not scores.requires_grad or not weights.requires_grad \
                or scores.shape != weights.shape or axis is None or scores.shape[axis[0]] < 2:
            continue  # over one key every weight is 1: constant-result's, not a removed term
        for source, leaf in zip(sources, leaves):
            moved = _reach(scores, leaf, gen)
            if moved is None or moved == 0.0:
                continue
            kept = _reach(weights, leaf, gen)
            if kept is not None and kept <= _REMOVED * moved:
                return [_finding(rec, source.name)]
    return []


def _taken_by_products(records: list[OpRecord]) -> set[int]:
    """The indices of the softmaxes whose weights a product takes (through moves): attentions."""
    made: dict[int, int] = {}  # record index -> the softmax its output carries
    found = set()
    for rec in records:
        origins = {made.get(m.src[0], m.src[0]) for m in rec.inputs if m.src is not None}
        if rec.op in SOFTMAXES:
            made[rec.index] = rec.index
        elif rec.op in MOVES:
            origin = next(iter(origins), None) if len(origins) == 1 else None
            if origin is not None and records[origin].op in SOFTMAXES:
                made[rec.index] = origin
        elif rec.op in MATMULS or rec.op in MULS:
            found.update(o for o in origins if 0 <= o < len(records)
                         and records[o].op in SOFTMAXES)
    return found


def _input_value(meta, steps) -> Tensor | None:
    if meta.src is None or meta.src[0] not in steps:
        return None
    outs = steps[meta.src[0]].outputs
    return outs[meta.src[1]] if meta.src[1] < len(outs) else None


def _reach(value: Tensor, leaf: Tensor, gen) -> float | None:
    """How much a random projection of ``value`` moves with ``leaf`` (the summed size of its
    gradient); None when autograd cannot say."""
    if not value.is_floating_point():
        return None
    cot = torch.randn(value.shape, generator=gen, dtype=value.dtype)
    try:
        (grad,) = torch.autograd.grad((value.nan_to_num(0.0, 0.0, 0.0) * cot).sum(), [leaf],
                                      allow_unused=True, retain_graph=True)
    except RuntimeError:
        return None
    return 0.0 if grad is None else float(grad.abs().sum())


def _finding(rec: OpRecord, name: str):
    where = f"{rec.file}:{rec.line}" if rec.line else rec.op
    message = (f"the softmax at {where} removes everything `{name}` adds to its scores: the "
               f"attention weights are the same whatever `{name}` holds, though the scores are "
               f"made from it (its part of each score is the same for every key it normalises "
               f"over, and a softmax subtracts such a term)")
    hint = (f"let `{name}` meet the keys before the scores are summed: through a nonlinearity "
            f"(an additive score is v · tanh(W_q q + W_k k)), or a product with them (q · k)")
    return diagnostic("attention-textbook", message, hint, rec=rec, input=name)
