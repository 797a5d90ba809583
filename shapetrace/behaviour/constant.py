"""input-ignored: an output the forward computes from its inputs that is the same whatever they are.

An output with a batch axis that is made from the inputs (a part of the stream the forward
computed from them) must be able to change with them: a document embedding read at a position
that a causal mask lets see only itself (a learned token put first, ``x[:, 0]`` after causal
attention), a value every one of whose entries a fill or a product by zero replaced. Checked in
three steps, each of which must agree: autograd (the batch-leak check's dependencies) finds no
input that the output depends on; the module run again with fresh inputs, and with every
parameter changed a little (an output layer initialised to zero by design, a LoRA's second
matrix, a ControlNet's zero convolution, hides nothing then), gives the output unchanged; and the
two recorded runs, walked back from the op that made the output, reach an op whose output is
the same in both while an operand whose values it carries differs: where the inputs were lost.
An output made from parameters or tables alone (a learned token expanded to the batch, a
position table) never reaches such an op and is not judged; nor is an op that loses them through
a mask, a comparison, an integer or a shape (``expand_as(x)``, ``zeros_like(x)``).
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import Tensor

from ..analysis.graph import carries
from ..base.ops import base_name
from ..base.records import OpRecord
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe
from .intent import trace_evidence
from .results import RTOL, DependencyResult
from .runs import get, nudge_weights

#: ops whose output takes only the shape, dtype or device of an operand, not its values
_SHAPE_ONLY = ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
               "randint_like", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
               "expand_as", "type_as", "view_as", "reshape_as", "to", "size")


def inputs_ignored(probe: Probe, dep: DependencyResult) -> list:
    """The ``input-ignored`` finding for the first output computed from the inputs that no
    input moves; or nothing."""
    labels = [label for label, _ in probe.paths]
    if not dep.pairs or not labels:
        return []
    unmoved = [k for k, label in enumerate(labels) if not any(_moves(p) for p in dep.pairs
                                                              if p.output == label)]
    fresh = _fresh_inputs(probe) if unmoved else None
    if fresh is None:
        return []
    gen = torch.Generator().manual_seed(2)
    try:
        nudge_weights(probe.model, gen)  # the recorded runs keep no gradient and no warning
        one = locate.record(probe, probe.args, grad=False, restore=False)
        other = locate.record(probe, fresh, grad=False, restore=False)
    except Exception:  # noqa: BLE001 - the module refusing fresh values says nothing here
        return []
    finally:
        probe.restore_state()
    for k in unmoved:
        path = probe.paths[k][1]
        a, b = get(one.output, path), get(other.output, path)
        if not isinstance(a, Tensor) or not isinstance(b, Tensor) or not _same(a, b):
            continue
        lost = _where_lost(one, other, a)
        if lost is not None:
            return [_finding(probe, one, labels[k], lost[0])]
    return []


def _moves(pair) -> bool:
    for grid in (pair.batch_strength, pair.time_strength):
        if grid is not None and bool((grid > pair.rtol).any()):
            return True
    return False


def _fresh_inputs(probe: Probe) -> list | None:
    """The probe's inputs with every floating one drawn afresh and every token input moved to
    other tokens of the same range; None when there is none to change."""
    gen = torch.Generator().manual_seed(3)
    args, changed = list(probe.args), False
    for i, value in enumerate(probe.args):
        role = probe.roles[i]
        if not isinstance(value, Tensor) or role is None or role.is_constant or not value.numel():
            continue
        if value.is_floating_point():
            args[i] = torch.randn(value.shape, generator=gen, dtype=value.dtype) * (
                float(value.std()) if value.numel() > 1 else 1.0) + float(value.mean())
            changed = True
        elif role.tokens and value.dtype not in (torch.bool,):
            top = int(value.max()) + 1
            if top > 1:
                args[i] = (value + torch.randint(1, top, value.shape, generator=gen)) % top
                changed = True
    return args if changed else None


def _same(a: Tensor, b: Tensor) -> bool:
    if a.shape != b.shape or not a.is_floating_point():
        return False
    a, b = a.nan_to_num(0.0, 0.0, 0.0), b.nan_to_num(0.0, 0.0, 0.0)
    return bool(torch.allclose(a, b, rtol=RTOL, atol=RTOL * max(1.0, float(a.abs().max()))))


def _where_lost(one: locate.Run, other: locate.Run, out: Tensor
                ) -> tuple[OpRecord, int] | None:
    """(the op nearest the output whose output is the same in both runs while an operand whose
    values it carries differs, that operand's slot), walking back from the op that made
    ``out``; None when the runs part or the output is made from constants alone."""
    if len(one.steps) != len(other.steps):
        return None
    pairs: dict[int, tuple] = {}
    for s, t in zip(one.steps, other.steps):
        if s.rec.op != t.rec.op or s.rec.line != t.rec.line:
            return None
        pairs[s.rec.index] = (s, t)
    made = next((s for s in reversed(one.steps) for o in s.outputs
                 if o.shape == out.shape and o.dtype == out.dtype and torch.equal(o, out)), None)
    if made is None:
        return None
    todo, seen = [made.rec.index], set()
    while todo:
        index = todo.pop(0)
        if index in seen or index not in pairs:
            continue
        seen.add(index)
        s, t = pairs[index]
        rec = s.rec
        for slot, meta in enumerate(rec.inputs):
            if meta.src is None or meta.src[0] not in pairs:
                continue
            a, b = pairs[meta.src[0]]
            k = meta.src[1] if len(meta.src) > 1 else 0
            if k >= len(a.outputs) or k >= len(b.outputs):
                continue
            if _same(a.outputs[k], b.outputs[k]):
                todo.append(meta.src[0])
            elif a.outputs[k].is_floating_point() and carries(rec, slot) \
                    and base_name(rec.op) not in _SHAPE_ONLY:
                return rec, slot
    return None


def _finding(probe: Probe, run: locate.Run, label: str, rec: OpRecord):
    where = f"`{rec.source or rec.op}` at {rec.file}:{rec.line}" if rec.line else f"`{rec.op}`"
    message = (f"`{label}` is computed from the inputs but is the same whatever they are "
               f"(fresh inputs, the weights changed, give it unchanged): {where} takes values "
               f"of a tensor that does depend on them and gives the same values every time")
    causal = trace_evidence(SimpleNamespace(dims=probe.dims, records=run.records))
    if causal:
        message += (f"; the module is causal ({causal}): a position sees only those before it, "
                    f"and one before every input (a learned token put first) sees none of them")
        hint = ("read the summary from a position that sees the inputs (the last one, in a causal "
                "model), or make the encoder bidirectional (no causal mask)")
    else:
        hint = "make the output from values that depend on the inputs"
    return diagnostic("input-ignored", message, hint, rec=rec, output=label)
