"""mask-ignored: a (B, T) mask whose excluded positions still move the output.

Which positions a mask excludes is read from the code, where it says (``analysis.masks``, the
reading the driver gives masks by; in forward or in the code forward hands the mask to): ``masked_fill(mask == 0, ...)`` or SDPA's boolean
``attn_mask`` keep the True positions, ``masked_fill(mask, ...)`` excludes them. Where the code
says nothing, a 0/1 ``attention_mask`` (B, T) that shapetrace makes is right-padded as a
tokenizer makes it, and read as the tokenizer means it: 1 is a real token, 0 is padding.
A meaning the user declares (``mask-keep``, ``mask-drop``) stands over the code's reading: a
mask the code turns the other way before applying it is found at the op that turned it.
Whatever the code does with the mask, the output at a kept position must not depend on the
inputs at the excluded positions of its sample. Checked like causal-leak, by autograd: one
backward of a random projection of the outputs at the kept positions, and the gradient at the
excluded inputs must be zero. When it is not, the first op on a recorded run whose output at a
kept position depends on an excluded input is named: the weighted sum of an attention the mask
never reached (or reached on the wrong axis: the queries' rows masked, the keys left). A mask
never applied is placed at the softmax that took those weights, where it should have been
applied before, the weighted sum as the place it was used. Without
a reading from the code, a mask that changes the output is applied by a convention of its own
(1 = padding is one too) and is not judged, only one that changes nothing (the output is the
same with every position marked real). Only an attention is judged (a product whose operand
has two position axes, SDPA, a softmax over the positions, or the weighted sum of an attention
pooling, ``(x * softmax(scores)[..., None]).sum(1)``): a convolution or a plain pooling that
mixes positions is a design choice, not a mask that says one thing and does another. A mask
multiplied in (``scores * mask``, or cast to floats for a mean pooling: ``h * mask.float()
.unsqueeze(-1)``) reads 1 as kept, and is where it is applied: an encoder that never got it
still mixes the padding into the real tokens before the pooling leaves it out.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from ..analysis.graph import made_through
from ..analysis.masks import handed_meaning
from ..base.names import PADDING_INPUTS
from ..base.ops import (
    CASTS,
    DROPOUTS,
    EXPANDS,
    MASKED_FILLS,
    MATMULS,
    MHA_FORWARD,
    MULS,
    RESHAPES,
    SDPA,
    SIMPLE_MOVES,
    SOFTMAXES,
    WHERES,
    base_name,
    reduced_axes,
)
from ..base.records import OpRecord
from ..rules.registry import diagnostic
from . import locate
from .padding import padding_counted, tokens_padding_counted
from .probe import Probe, axes_of
from .results import RTOL
from .runs import get

_ATTENTIONS = MATMULS | {SDPA}
#: Ops that take a mask and apply it inside, before their softmax (one position axis out).
_WHOLE_ATTENTIONS = frozenset({SDPA, MHA_FORWARD})


def padding_ignored(probe: Probe) -> list:
    """The ``mask-ignored`` finding for a generated padding mask, or nothing."""
    found = _judged_mask(probe) if probe.B != probe.T else None
    unread = found is None and probe.B != probe.T  # no reading of it: judged only if dropped
    if unread:
        found = _mask_of_no_reading(probe)
    if found is None:  # no mask passed in: padding the code marks in its own tokens
        return tokens_padding_counted(probe)
    arg, keep, meaning, declared = found
    sources = [s for s in probe.sources() if s.arg != arg and s.role.batch is not None
               and s.role.time is not None and s.role.stream == "query"
               and s.value.shape[s.role.batch] == probe.B and s.value.shape[s.role.time] == probe.T]
    if not sources:
        return []
    leaves, args, emb = probe.leaves(sources)
    with torch.enable_grad(), probe.embedding("replace", emb), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = probe.call(args)
        outs = [get(out, path) for _, path in probe.paths]
        hidden = not _leaks(outs, leaves, sources, keep, probe)
        if not hidden:
            changes_nothing = _changes_nothing(probe, args, arg, meaning, outs)
    if hidden:  # the values hidden: their number must not count either (a meaning the code
        # says, or a tokenizer's whose padding the code was just found to hide)
        return padding_counted(probe, arg, meaning or "keep", probe.roles[arg].name) \
            if meaning in ("keep", "drop", None) and not unread else []
    if unread and not (changes_nothing and _changes_nothing(probe, args, arg, "flip", outs)):
        return []  # it does something, by a convention nothing says: not judged
    if meaning is None and not changes_nothing:
        # Without a reading from the code, which values mean padding is the code's own
        # convention (1 = padding is one too): a mask that changes the output is applied
        # its own way and is not judged here. One that changes nothing is ignored.
        return []
    rec, records, run = _first_leak(probe, args, emb, leaves, sources, keep)
    pooled = _weighted_sum(rec, records, probe.T) if rec is not None else None
    if unread and rec is not None:  # scores of any number of keys (a null key, memory slots)
        taken = pooled or _weights_taken(rec, records, probe.T) or _softmax_after(rec, records)
        return _dropped(probe, run, arg, records, taken) if taken is not None else []
    if rec is None or not (_is_attention(rec, probe.T) or pooled is not None):
        return []
    applied = None if changes_nothing else _masking(records, probe)
    if not changes_nothing and applied is None:
        return []  # the mask hides something else (outputs, a loss): not the keys it is judged on
    mask_name = probe.roles[arg].name
    mixes = f"`{rec.source or rec.op}` at {rec.file}:{rec.line} mixes them in"
    if declared and not changes_nothing:
        return [_against_declared(probe, mask_name, meaning, applied, records, rec, mixes)]
    if changes_nothing:
        message = (f"`{mask_name}` is never applied: the output is the same with every position "
                   f"marked real, and the output at real positions depends on the inputs at "
                   f"padded positions: {mixes}")
    else:
        said = "True/1 = may attend" if meaning == "keep" else "True/1 = masked out"
        message = (f"`{mask_name}` does not hide what the code says it hides: forward reads it as "
                   f"{said}, and applies it here (`{applied.source or applied.op}`), yet the "
                   f"output at the positions it keeps depends on the inputs at the positions it "
                   f"masks: {mixes}")
        hint = (f"apply the mask along the key axis of the scores ({mask_name}[:, None, None, :] "
                f"for (B, H, T, T) scores), so that the positions it masks are hidden from every "
                f"query")
        softmaxed = any(r.op in SOFTMAXES and any(m.src is not None and m.src[0] == applied.index
                                                   for m in r.inputs) for r in records)
        if applied.op in MULS and softmaxed:  # multiplied into scores: a masked score 0, weighted
            hint = (f"a score multiplied by 0 still takes weight in the softmax: fill the masked "
                    f"scores with -inf instead (scores.masked_fill(~{mask_name}.bool(), "
                    f"float('-inf'))), or multiply the weights after the softmax and renormalise")
        return [diagnostic("mask-ignored", message, hint, rec=applied, mask=mask_name)]
    hint = (f"exclude the padded keys from these weights: scores.masked_fill(~{mask_name}"
            f"[:, None, None, :].bool(), float('-inf')), or an SDPA bool attn_mask that is True "
            f"where {mask_name} == 1")
    taken = pooled or _weights_taken(rec, records, probe.T)  # the softmax the mask should precede
    made = (taken.file, taken.line) if taken is not None and taken.line else None
    return [diagnostic("mask-ignored", message, hint, rec=rec, mask=mask_name, made_at=made)]


def _against_declared(probe: Probe, mask_name: str, meaning: str, applied: OpRecord, records,
                      rec: OpRecord, mixes: str):
    """The ``mask-ignored`` finding for a mask the user declared (``mask-keep``, ``mask-drop``)
    that the code applies so that the positions it masks still move the output: placed at the
    op that made the mask the code applies (``attention_mask == 0``), used where it is
    applied."""
    said = "True/1 = may attend (mask-keep)" if meaning == "keep" else \
        "True/1 = masked out (mask-drop)"
    forward = getattr(type(probe.model), "forward", None)
    read = handed_meaning(forward, mask_name, type(probe.model))[0] if forward is not None else None
    other = "" if read in (None, meaning) else (
        f"; the code reads it the other way, as "
        f"{'True/1 = may attend' if read == 'keep' else 'True/1 = masked out'}")
    where = f"`{applied.source or applied.op}`"
    tail = ", which mixes them in" if applied is rec else f", and {mixes}"
    message = (f"`{mask_name}` is declared {said}, yet the output depends on the inputs at the "
               f"positions it masks: the code applies it at {where}{other}{tail}")
    if other:
        reads = "masked out" if read == "drop" else "may attend"
        hint = (f"turn it the other way where it is handed on (~{mask_name} for booleans, "
                f"1 - {mask_name} for 0/1): the code it goes to reads True/1 as {reads}")
    else:
        hint = (f"hand the attention a mask that is True where {mask_name} keeps a position (an "
                f"SDPA bool attn_mask is True where a query may attend), or fill the scores "
                f"where it masks one")
    made = _made_at(applied, records)
    return diagnostic("mask-ignored", message, hint, rec=applied, mask=mask_name, made_at=made)


def _made_at(applied: OpRecord, records) -> tuple[str, int] | None:
    """Where the mask ``applied`` uses was made from the input: the first op before it, past
    moves (``unsqueeze``, ``view``), that is not one (``mask == 0``, ``~mask``); None when the
    mask is the input as it came."""
    slot = _mask_slot(applied)
    meta = applied.inputs[slot] if slot is not None and slot < len(applied.inputs) else None
    made = made_through(meta, records, SIMPLE_MOVES)[0]
    return (made.file, made.line) if made is not None and made.op not in SIMPLE_MOVES \
        and made.line else None


def _weights_taken(rec: OpRecord, records, T: int) -> OpRecord | None:
    """The softmax that made the weights ``rec`` mixes the values with (through dropout and
    moves), or None."""
    meta = next((m for m in rec.inputs if tuple(m.shape).count(T) >= 2), None)
    made = made_through(meta, records, SIMPLE_MOVES | DROPOUTS)[0]
    return made if made is not None and made.op in SOFTMAXES else None


def _weighted_sum(rec: OpRecord, records, T: int) -> OpRecord | None:
    """The softmax over the positions whose weights ``rec`` sums the values with, when ``rec``
    is a sum over an axis of T of a product of such weights and values (attention pooling:
    ``(x * w.unsqueeze(-1)).sum(1)``); else None."""
    found = reduced_axes(rec) if base_name(rec.op) == "sum" else None
    if not found or not rec.inputs or T not in [rec.inputs[0].shape[a] for a in found[0]]:
        return None
    product = made_through(rec.inputs[0], records, SIMPLE_MOVES)[0]
    if product is None or product.op not in MULS:
        return None
    for meta in product.inputs:
        made = made_through(meta, records, SIMPLE_MOVES | DROPOUTS)[0]
        if made is not None and _is_attention(made, T) and made.op in SOFTMAXES:
            return made
    return None


def _same(a, b) -> bool:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return True
    if a.shape != b.shape:
        return False
    return bool(torch.allclose(a.detach().nan_to_num(0.0, 0.0, 0.0), b.nan_to_num(0.0, 0.0, 0.0),
                               rtol=RTOL, atol=RTOL))


def _changes_nothing(probe: Probe, args, arg: int, meaning: str | None, outs) -> bool:
    """Whether the outputs are the same with every position of mask ``arg`` kept (all ones;
    all zeros for a mask the code reads as True = masked out); with ``meaning`` "flip", with
    each of its values turned the other way."""
    every_real = list(args)
    if meaning == "flip":
        mask = args[arg]
        every_real[arg] = ~mask if mask.dtype == torch.bool else 1 - mask
    else:
        every_real[arg] = (torch.zeros_like if meaning == "drop" else torch.ones_like)(args[arg])
    with torch.no_grad():
        unmasked = probe.call(every_real)
    return all(_same(a, get(unmasked, path)) for a, (_, path) in zip(outs, probe.paths))


def _judged_mask(probe: Probe) -> tuple[int, Tensor, str | None] | None:
    """(argument index, (B, T) bool of the kept positions, the code's reading or None) for the
    first (B, T) 0/1 mask whose meaning the code says (True kept, or True masked out: read in
    forward and in the code forward hands it to), or else a tokenizer-made padding mask."""
    forward = getattr(type(probe.model), "forward", None)
    for i, role, value in _zero_one_masks(probe, floats=True):
        if not role.name:
            continue
        declared = role.meaning in ("keep", "drop")
        meaning = role.meaning if declared else handed_meaning(
            forward, role.name, type(probe.model))[0] if forward is not None else None
        if value.is_floating_point() and not declared and meaning != "mul":
            continue  # floats of 0 and 1 are a mask only where the code multiplies them in
        meaning = "keep" if meaning == "mul" else meaning  # multiplied in: 1 keeps a value
        if meaning in ("keep", "drop"):
            keep = value.bool() if meaning == "keep" else ~value.bool()
            if bool((~keep).any()) and bool(keep.any(1).all()):
                return i, keep, meaning, declared
    found = _padding_mask(probe)
    return (*found, None, False) if found is not None else None


def _zero_one_masks(probe: Probe, *, floats: bool = False):
    """``(argument index, its role, its value)`` for each argument that is a (B, T) tensor of
    integers or booleans holding only 0 and 1: the masks a check may judge; of floats too with
    ``floats`` (a mask the code multiplies in)."""
    for i, role in enumerate(probe.roles):
        value = probe.args[i] if i < len(probe.args) else None
        if role is not None and isinstance(value, Tensor) \
                and (floats or not value.is_floating_point()) \
                and tuple(value.shape) == (probe.B, probe.T) \
                and bool(((value == 0) | (value == 1)).all()):
            yield i, role, value


def _mask_of_no_reading(probe: Probe) -> tuple[int, Tensor, None, bool] | None:
    """(argument index, its True positions, None, False) for the first (B, T) 0/1 tensor passed
    in with both values in every row, whose meaning neither the code nor its values say (a
    declared ``mask=B,T:bool``). Which value keeps a position is not known; a mask that changes
    nothing, whichever way it is set, after the forward read it, is dropped either way."""
    for i, _, value in _zero_one_masks(probe):
        keep = value.bool()
        if bool(keep.any(1).all()) and bool((~keep).any(1).all()):
            return i, keep, None, False
    return None


def _dropped(probe: Probe, run: locate.Run, arg: int, records, taken: OpRecord) -> list:
    """The ``mask-ignored`` finding for a mask that the forward read (reshaped, padded, cast)
    and that changes nothing, however it is set: what was made from it was dropped. Placed at
    the line of the forward that read it which called the sublayer the attention ran in (the
    call that should have been given the mask), else at the attention; nothing when no op read
    it (a mask a signature takes and leaves: not this check's to judge). ``taken``: the
    softmax of the attention that weighs the positions it masks."""
    mask = probe.args[arg]
    derived: list[OpRecord] = []  # the records that read it, or what was made from it
    made: set[int] = set()
    for r in records:
        if any(m._made_by in made if m._made_by is not None else
               tuple(m.shape) == tuple(mask.shape) and m.dtype == mask.dtype for m in r.inputs):
            derived.append(r)
            made.add(r.index)
    first = next((r for r in derived if r.site is not None and r.line is not None), None)
    if first is None:
        return []
    last = max((r for r in derived if r.site is not None and r.site[0] is first.site[0]
                and r.line is not None), key=lambda r: r.index)
    name = probe.roles[arg].name or "the mask"
    file, line = (None, None) if taken.site is not None and taken.site[0] is first.site[0] \
        else locate.called_at(probe, run, taken)
    used = f"the attention at {taken.file}:{taken.line} (`{taken.source or taken.op}`)"
    message = (f"`{name}` is read (line {first.line}: `{first.source or first.op}`; "
               f"last at line {last.line}: `{last.source or last.op}`) and never applied: the "
               f"output is the same whatever it holds (every position kept, or each one "
               f"turned the other way), and the output at the positions it keeps depends on the "
               f"inputs at the positions it masks: {used} weighs them in"
               + (f", called at line {line} without it" if line is not None else ""))
    hint = (f"pass what line {last.line} makes to the attention (its mask argument), or apply it "
            f"to the scores before the softmax: scores.masked_fill(~mask, float('-inf'))")
    at = {"file": file, "line": line} if line is not None else {}
    return [diagnostic("mask-ignored", message, hint, rec=taken, mask=name, **at)]


def _softmax_after(rec: OpRecord, records, hops: int = 3) -> OpRecord | None:
    """The softmax that normalises what ``rec`` made, within ``hops`` ops (a scale, a bias
    added on the way): the weights of an attention whose scores ``rec`` computed."""
    reached = {rec.index}
    for later in records[rec.index + 1:]:
        if any(m._made_by in reached for m in later.inputs):
            if later.op in SOFTMAXES:
                return later
            if len(reached) <= hops:
                reached.add(later.index)
    return None


def _padding_mask(probe: Probe) -> tuple[int, Tensor] | None:
    """(argument index, (B, T) bool of real tokens) for a 0/1 padding mask made as a tokenizer
    makes it: each row real tokens first, then padding, some padding somewhere."""
    for i, role, value in _zero_one_masks(probe):
        if role.name not in PADDING_INPUTS:
            continue
        keep = value == 1
        prefix = keep.long().cumprod(1).bool()
        if bool((prefix == keep).all()) and bool((~keep).any()) and bool(keep[:, 0].all()):
            return i, keep
    return None


def _row_cotangent(t: Tensor, keep: Tensor, probe: Probe, gen) -> Tensor | None:
    """Random values on the elements of ``t`` at real positions, zeros elsewhere; on all of
    them for an output with a batch axis and no position axis (pooled, or one row per label:
    none of it may read a masked position); None for an output without one batch axis, or
    with more than one position axis."""
    ax = axes_of(t.shape, probe.dims)
    if ax.batch is None or len(ax.time) > 1 or not t.is_floating_point():
        return None
    if not ax.time:
        return torch.randn(t.shape, generator=gen, dtype=t.dtype)
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


def _first_leak(probe: Probe, args, emb, leaves, sources,
                keep: Tensor) -> tuple[OpRecord | None, list[OpRecord], locate.Run]:
    """The first op whose output at a real position depends on a padded input, the records of
    the run, and the run."""
    run = locate.record(probe, args, grad=True, embeddings=emb)
    for step in run.steps:
        outs = [t for t in step.outputs if t.requires_grad]
        if outs and _leaks(outs, leaves, sources, keep, probe):
            return step.rec, run.records, run
    return None, run.records, run


def _masking(records, probe: Probe) -> OpRecord | None:
    """The first op of the run that masks attention scores with a mask per sample: a
    masked_fill or where on a tensor with two axes of T whose mask has an axis of B, or SDPA
    given such a mask."""
    for rec in records:
        if rec.op in MASKED_FILLS:
            slot = 1
        elif rec.op in WHERES:
            slot = 0 if rec.op == "torch.where" else 1
        elif rec.op in _WHOLE_ATTENTIONS:
            slot = _mask_slot(rec, probe)
            if slot is None:
                continue
        elif rec.op in MULS and len(rec.inputs) == 2 and rec.outputs:
            slot = next((i for i, m in enumerate(rec.inputs) if probe.B in tuple(m.shape)
                         and probe.T in tuple(m.shape) and (not m.dtype.is_floating_point
                                                            or _cast_mask(m, records))), None)
            if slot is not None and probe.T in tuple(rec.outputs[0].shape) \
                    and rec.inputs[1 - slot].dtype.is_floating_point:
                return rec  # scores or weights multiplied by a 0/1 mask of its own per sample
            continue
        else:
            continue
        if slot >= len(rec.inputs) or not rec.outputs:
            continue
        if rec.op not in _WHOLE_ATTENTIONS and tuple(rec.outputs[0].shape).count(probe.T) < 2:
            continue  # SDPA's output has one T: its mask is on the scores inside
        if probe.B in tuple(rec.inputs[slot].shape):
            return rec
    return None


def _mask_slot(rec: OpRecord, probe: Probe | None = None) -> int | None:
    """Which tensor input of ``rec`` is the mask it applies: SDPA's ``attn_mask``; for torch's
    whole multi-head attention, the first input after the projections' weights shaped like a
    mask per sample ((B, T), its ``key_padding_mask``) when ``probe`` gives the sizes, else its
    last input; a where's condition; a masked_fill's mask."""
    if rec.op == SDPA:
        return 3
    if rec.op == MHA_FORWARD:
        if probe is None:
            return len(rec.inputs) - 1 if len(rec.inputs) > 3 else None
        return next((i for i, m in enumerate(rec.inputs) if i >= 3
                     and tuple(m.shape) == (probe.B, probe.T)), None)
    return 0 if rec.op == "torch.where" else 1


def _cast_mask(meta, records) -> bool:
    """Whether ``meta`` is a mask handed in, cast to floats and moved (``mask.float()
    .unsqueeze(-1)``, multiplied into the values of a mean pooling)."""
    made, start = made_through(meta, records, SIMPLE_MOVES | CASTS | RESHAPES | EXPANDS, 4)
    return made is None and start is not None and not start.dtype.is_floating_point


def _is_attention(rec: OpRecord, T: int) -> bool:
    """An attention by what the op computes: SDPA, a product of an operand with two position
    axes, or a softmax over the positions (the weights of an attention pooling, or of scores
    whose normaliser the masked positions still enter)."""
    if rec.op in _WHOLE_ATTENTIONS:
        return True
    if rec.op in SOFTMAXES and rec.inputs and rec.outputs:
        dim = rec.arg(1, "dim")
        shape = tuple(rec.inputs[0].shape)
        return isinstance(dim, int) and -len(shape) <= dim < len(shape) and shape[dim] == T
    return rec.op in MATMULS and any(tuple(m.shape).count(T) >= 2 for m in rec.inputs)
