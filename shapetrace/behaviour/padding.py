"""Padding that is hidden but still counted: the other half of ``mask-ignored``.

A padding mask says its positions are not there. Hiding their values is not enough: a sequence
of real tokens must give the same output at those tokens however many padded positions follow
it. Checked by running the module twice on the same real tokens: once at the probe length T
with the last p positions padded (every sample alike), once at T - p with none, and comparing
the outputs at the real positions (a pooled output whole). When they differ, the two recorded
runs are walked side by side to the first op whose output at the real positions differs. Only
an op that counts positions is judged there: a softmax over the positions (the padded ones
still take weight: a score filled with 0, values zeroed but keys left), a sum or mean that
takes them (``(h * mask).mean(1)``), or a division by the number of positions (``/ h.shape[1]``).
Any other first difference (a convolution reaching past the last real token, a length-scaled
score, the last position read as the summary) is a design this check does not judge.

Run only after the mask's values were found hidden (no gradient reaches the padded inputs), for
a mask whose meaning the code says or the user declared. Without a mask passed in, padding is
what the code itself says it is: a token id that the embedding's ``padding_idx`` names and that
forward compares the tokens with to hide values (``tokens.eq(self.padding_idx)`` made the
mask of a fill or an attention, or a factor of the embeddings), with no other sequence beside
them. Then the padded run has that id in its last positions, the short run the same real tokens alone (the id
kept out of them), and an attention that still weighs those positions (torch's whole attention
called without the padding mask the code made) is judged the same way.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from ..base.ops import (CASTS, DIVS, EQUALITIES, INTEGER_CASTS, MASKED_FILLS, MHA_FORWARD, MULS, NEGATIONS, SDPA,
                        SIMPLE_MOVES, SOFTMAXES, WHERES, base_name, reduced_axes)
from ..base.records import OpRecord
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe
from .results import RTOL
from .runs import get

#: reductions that count what they take (a max or a min does not)
_COUNTING = frozenset({"sum", "mean", "nansum", "nanmean"})


def padding_counted(probe: Probe, arg: int, meaning: str, name: str) -> list:
    """The ``mask-ignored`` finding for a mask whose padded positions, hidden, still count;
    or nothing. ``arg``: the mask's argument; ``meaning``: "keep" (1 = real) or "drop"."""
    short = _short_length(probe)
    pair = _inputs(probe, arg, meaning, short) if short is not None else None
    if pair is None:
        return []
    found = _counted(probe, *pair, short)
    if found is None:
        return []
    rec, what = found
    p = probe.T - short
    source = f"`{rec.source or rec.op}` at {rec.file}:{rec.line}"
    message = (f"`{name}` hides the values at padded positions but not their number: the same "
               f"real tokens give another output at those tokens when {p} more padded "
               f"position{'s follow' if p > 1 else ' follows'} them; {source} {what}")
    if what.startswith("weighs"):
        hint = (f"fill the scores at padded keys with -inf before the softmax (scores.masked_fill("
                f"~{name}[:, None, None, :].bool(), float('-inf'))): a score of 0 still takes "
                f"weight")
    else:
        hint = (f"divide by the number of real positions: (h * m).sum(1) / m.sum(1), with m = "
                f"{name}[..., None]")
    return [diagnostic("mask-ignored", message, hint, rec=rec, mask=name)]


def tokens_padding_counted(probe: Probe) -> list:
    """The ``mask-ignored`` finding for padding the code marks in its own tokens (an id its
    embedding's ``padding_idx`` names, compared with the tokens in forward) whose number still
    changes the output at the real tokens; or nothing."""
    short = _short_length(probe)
    if short is None:
        return []
    for arg, pad, size, compared in _padding_ids(probe):
        pair = _token_inputs(probe, arg, pad, size, short)
        found = _counted(probe, *pair, short) if pair is not None else None
        if found is None:
            continue
        rec, what = found
        name = probe.roles[arg].name or "the tokens"
        p = probe.T - short
        message = (f"`{name}` equal to {pad} are padding by the code's own reading (its embedding's "
                   f"padding_idx; line {compared.line}: `{compared.source or compared.op}`), yet "
                   f"the same real tokens give another output at those tokens when {p} padded "
                   f"token{'s follow' if p > 1 else ' follows'} them: `{rec.source or rec.op}` at "
                   f"{rec.file}:{rec.line} {what}")
        hint = (f"hand the attention the padding mask the code makes ({name}.eq({pad}) as "
                f"src_key_padding_mask / key_padding_mask, or fill the scores at those keys with "
                f"-inf), so that the padded positions take no weight")
        return [diagnostic("mask-ignored", message, hint, rec=rec, mask=name)]
    return []


def _short_length(probe: Probe) -> int | None:
    """A length below T that no probe size takes (a run at it names its axes apart)."""
    sizes = set(probe.dims.values())
    return next((t for t in range(probe.T - 1, 1, -1) if t not in sizes), None)


def _counted(probe: Probe, long_args, short_args, short: int) -> tuple[OpRecord, str] | None:
    """(the first op whose output at the real positions differs between the padded run and
    the short one, what it does with the padded positions) when that op counts them; else
    None."""
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            long_out, short_out = probe.call(long_args), probe.call(short_args)
    except Exception:  # noqa: BLE001 - a module of one length (a table it adds whole)
        return None
    finally:
        probe.restore_state()
    pairs = [(get(long_out, path), get(short_out, path)) for _, path in probe.paths]
    if not pairs or any(not isinstance(a, Tensor) or not bool(a.isfinite().all()) for a, _ in pairs):
        return None
    if all(_agrees(a, b, probe.T, short) is not False for a, b in pairs):
        return None
    rec, long_rec = _first_difference(probe, long_args, short_args, short)
    what = _counts(rec, long_rec, probe.T, short) if rec is not None else None
    return (rec, what) if what is not None else None


def _padding_ids(probe: Probe):
    """``(token argument, padding id, vocabulary size, the comparison)`` for each token input
    whose embedding names a ``padding_idx`` that forward compares the tokens with
    (``tokens.eq(pad)``, ``tokens != pad``) and whose result hides values (:func:`_hides`)."""
    pads: dict[int, tuple[int, int]] = {}
    for path, arg, _ in probe.embeddings:
        try:
            module = probe.model.get_submodule(path.split(".", 1)[1] if "." in path else "")
        except AttributeError:
            continue
        pad = getattr(module, "padding_idx", None)
        if isinstance(pad, int) and arg not in pads:
            pads[arg] = (pad, module.num_embeddings)
    if not pads:
        return
    compared: dict[int, Tensor] = {}  # record index -> the tokens a comparison read

    def keep(rec, outs, op_args, op_kwargs) -> None:
        if rec.op in EQUALITIES and op_args and isinstance(op_args[0], Tensor):
            compared[rec.index] = op_args[0].detach().clone()

    try:
        run = locate.record(probe, probe.args, grad=False, also=keep)
    except Exception:  # noqa: BLE001
        return
    for arg, (pad, size) in pads.items():
        tokens = probe.args[arg]
        for rec in run.records:
            if rec.op not in EQUALITIES or not rec.inputs or rec.arg(1, "other") != pad:
                continue
            read = compared.get(rec.index)
            if read is not None and read.shape == tokens.shape and torch.equal(read, tokens) \
                    and _hides(rec, run.records):
                yield arg, pad, size, rec
                break


#: ops that carry a mask on as a mask: casts, moves, negations, comparisons, ands and ors
_CARRY = CASTS | INTEGER_CASTS | SIMPLE_MOVES | NEGATIONS | EQUALITIES | frozenset({
    "&", "|", "Tensor.logical_and", "torch.logical_and", "Tensor.logical_or", "torch.logical_or"})


#: arithmetic with a number that carries a mask on (``1 - m``, ``m * 1.0``)
_SCALAR_ARITHMETIC = frozenset({"sub", "rsub", "__rsub__", "mul", "add", "-", "+", "*"})


def _hides(compared: OpRecord, records: list[OpRecord]) -> bool:
    """Whether the comparison's result is used, carried on as a mask (cast, moved, negated,
    ``1 - m``), to hide values: the mask of a fill or a where, the mask of an attention, or a
    factor of floating values (``h * (1 - pad)``); not positions counted from it (``cumsum(m)
    * m``: integers)."""
    carried = {compared.index}
    for rec in records[compared.index + 1:]:
        slots = [i for i, m in enumerate(rec.inputs) if m.src is not None and m.src[0] in carried]
        if not slots:
            continue
        if rec.op in MASKED_FILLS and 1 in slots or rec.op in WHERES \
                or rec.op in (SDPA, MHA_FORWARD):
            return True
        if rec.op in MULS and any(i not in slots and m.dtype.is_floating_point
                                  for i, m in enumerate(rec.inputs)):
            return True
        scalar = len(rec.inputs) == 1 and base_name(rec.op) in _SCALAR_ARITHMETIC
        if rec.op in _CARRY or scalar:
            carried.add(rec.index)
    return False


def _token_inputs(probe: Probe, arg: int, pad: int, size: int, short: int
                  ) -> tuple[list, list] | None:
    """(the inputs with the padding id in the last positions of every sample, the same real
    tokens cut to ``short``): the id is kept out of the real tokens."""
    tokens = probe.args[arg]
    if tokens.dim() != 2 or tokens.shape[1] != probe.T or size < 2:
        return None
    if any(i != arg and isinstance(v, Tensor) and probe.T in v.shape
           for i, v in enumerate(probe.args)):
        return None  # another sequence beside it (a source beside a target): which of its
        # positions go with these is not known
    real = torch.where(tokens == pad, torch.full_like(tokens, (pad + 1) % size), tokens)
    padded = real.clone()
    padded[:, short:] = pad
    return _narrowed(probe, arg, padded, real[:, :short].clone(), short)


def _inputs(probe: Probe, arg: int, meaning: str, short: int) -> tuple[list, list] | None:
    """(inputs at T with the last positions padded, the same inputs cut to ``short`` with none
    padded); None when an input has an axis of T that is not its positions (a (T, T) mask)."""
    T, B = probe.T, probe.B
    mask = probe.args[arg]
    real = torch.zeros(B, T, dtype=torch.bool)
    real[:, :short] = True
    marked = real if meaning == "keep" else ~real
    padded = list(probe.args)
    padded[arg] = marked.to(mask.dtype)
    return _narrowed(probe, arg, marked.to(mask.dtype), marked[:, :short].to(mask.dtype), short,
                     whole=_other_sequences(probe, padded, arg, short))


def _other_sequences(probe: Probe, padded: list, arg: int, short: int) -> frozenset:
    """The inputs of T positions that are not the sequence the mask pads: float inputs whose
    last positions still move the outputs at the real positions with the mask padding them
    (the memory a cross-attention reads, at the same length by chance), and then the other
    masks and ids beside them. They are kept whole in the short run. Empty when one float
    input of T positions is all there is."""
    T = probe.T
    floats = [i for i, v in enumerate(padded) if i != arg and isinstance(v, Tensor)
              and v.is_floating_point() and T in v.shape and probe.roles[i] is not None
              and probe.roles[i].time is not None]
    if len(floats) < 2:
        return frozenset()
    leaves = list(padded)
    for i in floats:
        leaves[i] = padded[i].detach().clone().requires_grad_(True)
    try:
        with torch.enable_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = probe.call(leaves)
            total = sum(_at_real(get(out, path), T, short) for _, path in probe.paths)
            grads = torch.autograd.grad(total, [leaves[i] for i in floats], allow_unused=True)
    except Exception:  # noqa: BLE001 - no gradient to read: every input is cut, as before
        return frozenset()
    finally:
        probe.restore_state()
    other = {i for i, g in zip(floats, grads) if g is not None
             and bool(g.narrow(probe.roles[i].time, short, T - short).abs().sum() > 0)}
    if not other:
        return frozenset()
    return frozenset(other | {i for i, v in enumerate(padded) if i != arg and i not in floats
                              and isinstance(v, Tensor) and T in v.shape})


def _at_real(value, T: int, short: int):
    """The sum of ``value`` at its real positions (its first axis of T cut to ``short``)."""
    if not isinstance(value, Tensor) or not value.is_floating_point() or not value.requires_grad:
        return 0.0
    axis = next((a for a, n in enumerate(value.shape) if n == T), None)
    return (value if axis is None else value.narrow(axis, 0, short)).nan_to_num(0.0, 0.0, 0.0).sum()


def _narrowed(probe: Probe, arg: int, long_value: Tensor, short_value: Tensor, short: int,
              whole: frozenset = frozenset()) -> tuple[list, list] | None:
    """The probe's inputs with ``arg`` set to ``long_value`` (at T) and to ``short_value``, every
    other input but those of ``whole`` cut along its positions to ``short``; None when an input
    has an axis of T that is not its positions (a (T, T) mask)."""
    T = probe.T
    long_args, short_args = list(probe.args), list(probe.args)
    long_args[arg], short_args[arg] = long_value, short_value
    for i, value in enumerate(probe.args):
        if i == arg or i in whole or not isinstance(value, Tensor):
            continue
        role = probe.roles[i]
        axes = [a for a, n in enumerate(value.shape) if n == T]
        if not axes:
            continue
        if role is None or role.time is None or axes != [role.time]:
            return None
        short_args[i] = value.narrow(role.time, 0, short)
    if any(isinstance(v, Tensor) and T in v.shape for v in probe.kwargs.values()):
        return None
    return long_args, short_args


def _agrees(a, b, T: int, short: int) -> bool | None:
    """Whether ``a`` (of the padded run) at the real positions is ``b`` (of the short run);
    None when their shapes do not line up axis by axis (T against ``short``, the rest equal)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.dim() != b.dim() \
            or not a.is_floating_point():
        return None
    for axis, (m, n) in enumerate(zip(a.shape, b.shape)):
        if m == T and n == short:
            a = a.narrow(axis, 0, short)
        elif m != n:
            return None
    a, b = a.detach().nan_to_num(0.0, 0.0, 0.0), b.detach().nan_to_num(0.0, 0.0, 0.0)
    return bool(torch.allclose(a, b, rtol=RTOL, atol=RTOL))


def _first_difference(probe: Probe, long_args, short_args,
                      short: int) -> tuple[OpRecord | None, OpRecord | None]:
    """(the op of the short run, and of the padded run) whose output at the real positions is
    the first to differ between the two runs, walked side by side; Nones when the runs part
    (another op, another path) before one does."""
    try:
        long_run = locate.record(probe, long_args, grad=False)
        short_run = locate.record(probe, short_args, grad=False)
    except Exception:  # noqa: BLE001
        return None, None
    for one, other in zip(long_run.steps, short_run.steps):
        if one.rec.op != other.rec.op or one.rec.line != other.rec.line:
            return None, None
        if any(_agrees(a, b, probe.T, short) is False for a, b in zip(one.outputs, other.outputs)):
            return other.rec, one.rec
    return None, None


def _counts(rec: OpRecord, long_rec: OpRecord, T: int, short: int) -> str | None:
    """What ``rec`` (of the short run; ``long_rec``, the same op padded) does with the padded
    positions when it is one that counts them: a softmax over the positions, a sum or mean
    over them, a division by their number; else None."""
    if not long_rec.inputs:
        return None
    if rec.op in (SDPA, MHA_FORWARD):  # its inputs agree at the real positions: the keys past
        return f"weighs all {T} keys, the padded ones too (an attention that does not hide them)"
    shape = tuple(long_rec.inputs[0].shape)
    if rec.op in SOFTMAXES:
        dim = long_rec.arg(1, "dim")
        if isinstance(dim, int) and -len(shape) <= dim < len(shape) and shape[dim] == T:
            return f"weighs all {T} positions, the padded ones too (a softmax over them)"
        return None
    base = base_name(rec.op)
    if base in _COUNTING:
        found = reduced_axes(long_rec)
        if found and any(shape[a] == T for a in found[0]):
            verb = "averages" if "mean" in base else "sums"
            return f"{verb} over all {T} positions, the padded ones too"
        return None
    if rec.op in DIVS and len(long_rec.inputs) == 1:
        if long_rec.arg(1, "other") == T and rec.arg(1, "other") == short:
            return f"divides by the number of positions, {T}, the padded ones too"
    return None
