"""Which inputs a causal mask speaks for: those whose values reach the first scores the module
masks causally.

An encoder-decoder masks its decoder's self-attention with a triangle; the source sequence is
read whole, by the encoder and through the cross-attention. When both sequences are as long
(the lengths a parent passed, two inputs whose docstring says ``seq_len``), the source's later
positions move the decoder's earlier outputs by design. Which input is the causal one is read
from what depends on what: the first op that applies a causal mask (a fill or a ``where`` whose
mask a triangle or a comparison of positions built, an added triangle, SDPA with
``is_causal=True``) is differentiated with respect to every time-aligned input, and only those
it depends on are judged for the future. With one such input, or no causal mask in the run,
every input is judged as before.
"""

from __future__ import annotations

import torch

from ..analysis.graph import Graph
from ..base.ops import ADDS, COMPARISONS, MASKED_FILLS, SDPA, TRIANGULAR, WHERES
from ..base.records import OpRecord
from . import locate
from .inverted import mask_builder
from .probe import Probe


def causal_streams(probe: Probe) -> tuple[set[str], OpRecord] | None:
    """``(the names of the time-aligned inputs the first causally masked op depends on, that
    op)``, when there are two or more such inputs and it depends on some but not all; else None."""
    sources = [s for s in probe.sources() if s.role.stream == "query" and s.role.time is not None]
    if len(sources) < 2:
        return None
    leaves, args, emb = probe.leaves(sources)
    run = locate.record(probe, args, grad=True, embeddings=emb)
    graph = Graph(run.records)
    outputs = {step.rec.index: step.outputs for step in run.steps}
    for rec in run.records:
        if not _masks_causally(rec, graph):
            continue
        outs = [t for t in outputs.get(rec.index, ()) if t.is_floating_point() and t.requires_grad]
        if not outs:
            return None
        grads = torch.autograd.grad(sum(t.nan_to_num(0.0, 0.0, 0.0).sum() for t in outs), leaves,
                                    allow_unused=True)
        reached = {s.name for s, g in zip(sources, grads) if g is not None and bool(g.ne(0).any())}
        if not reached or len(reached) == len(sources):
            return None
        return reached, rec
    return None


def _masks_causally(rec: OpRecord, graph: Graph) -> bool:
    if rec.op == SDPA:
        return rec.kwargs.get("is_causal") is True or (len(rec.args) > 5 and rec.args[5] is True)
    if rec.op not in MASKED_FILLS and rec.op not in WHERES and rec.op not in ADDS:
        return False
    built = mask_builder(graph, rec, elsewhere=False)
    if built is None or not built.outputs:
        return False
    shape = built.outputs[0].shape  # positions compared: a square (T, T), not a (B, T) of ids
    return built.op in TRIANGULAR or (built.op in COMPARISONS and len(shape) >= 2
                                      and shape[-1] == shape[-2])


__all__ = ["causal_streams"]
