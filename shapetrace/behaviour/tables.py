"""position-frequencies: a sinusoidal table most of whose feature pairs never turn.

A sinusoidal table (absolute positions added to the input, the cosines and sines of a rotary
embedding, a diffusion model's time step features) turns each pair of features by the position
times a frequency, and the frequencies fall geometrically from the fastest to one ``base`` times
slower (10⁴ in the textbook, 10⁶ or so in long-context rotary tables): every pair turns. An
exponent that parses wrong (``base ** arange / d`` for ``base ** (arange / d)``, ``-log(base) /
d // 2`` dividing by floor) leaves most frequencies vanishingly small: those pairs hold the same
value at every position and say nothing about where a token is.

Read from values, never from names, in a recorded float64 run:
- the angles handed to ``sin`` and ``cos``, when they are an outer product (every row a multiple
  of one: positions or time steps times frequencies); the frequencies are known up to a scale;
- the tables the forward reads that were made before it (buffers, tensor attributes): a cosine
  and a sine of the same angles (``c² + s² = 1``: two tensors, features side by side or in
  halves of one, or a complex table on the unit circle) whose angles advance by the same step
  from one position to the next.
A table is a finding when its slowest pair that turns at all turns more than 10¹² times slower
than its fastest (no base used for positions comes near: 10⁴ in the textbook, 10⁶ to 10⁹ for
long-context rotary tables) and a quarter of its pairs (two at least) turn 10⁹ times slower;
pairs left unturned on purpose have steps of exactly zero. Only the frequencies are judged, not
the positions they multiply (a grid from -1 to 1 has one at or near 0). The finding is at the
line that made the frequencies, found by
their values among what the constructor made on its own lines (``record.built``) or the forward
did before, used where the forward read the table or took the sine.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..base.compat import held_tensors
from ..base.diagnostics import Diagnostic
from ..base.records import OpRecord
from ..record.tensors import tensors_in
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe
from .rotary import cosine_and_sine

_TRIG = frozenset({"torch.sin", "Tensor.sin", "torch.cos", "Tensor.cos"})
#: a pair that turns this many times slower than the fastest does not turn
_SLOW = 1e-9
#: no base used for positions makes a ladder this long (10⁴ in the textbook, 10⁹ at most)
_SPAN = 1e-12
#: the fewest pairs judged
_FEWEST = 4
#: how far the steps from one position to the next may differ (radians)
_STEADY = 1e-5
#: how far the steps may differ for a table read modulo a turn: large angles in float32 (a
#: thousand radians) keep about three decimals
_WRAPPED = 1e-2
#: the largest op output searched for the frequencies' values
_SEARCHED = 4096


def frozen_tables(probe: Probe) -> locate.Reader:
    """Each sinusoidal table the forward uses whose pairs mostly never turn, read from a
    recorded run (``locate.Reader``): one finding for each."""
    kept = _kept_tensors(probe.model)
    angles: list[tuple[Tensor, OpRecord]] = []
    read: dict[int, OpRecord] = {}

    def keep(rec: OpRecord, outs: tuple, args: tuple, kwargs: dict) -> None:
        if rec.op in _TRIG and args and isinstance(args[0], Tensor) \
                and args[0].is_floating_point() and args[0].dim() >= 2:
            angles.append((args[0].detach().to(torch.float64).clone(), rec))
        for t in tensors_in((args, kwargs)):
            base = t if t._base is None else t._base
            if id(base) in kept and id(base) not in read:
                read[id(base)] = rec

    def judge(run: locate.Run) -> list[Diagnostic]:
        judged: list[tuple[Tensor, OpRecord, str]] = []
        for angle, rec in angles:
            steps = _frequencies(angle)
            if steps is not None:
                judged.append((steps, rec, f"the angles of `{rec.source or rec.op}`"))
        used = [(kept[i][0], kept[i][1], rec) for i, rec in read.items()]
        found: list[Diagnostic] = []
        seen: set = set()
        for name, steps, rec in _table_steps(used):
            judged.append((steps, rec, f"the table `{name}`"))
        for name, steps, rec in _table_steps(used, _WRAPPED):
            steps = _one_ladder(steps)
            if _aliased(steps):  # a table's steps per position, read modulo a turn
                made = _made_wrapped(probe, steps)
                key = made[:2] if made is not None else (rec.file, rec.line)
                if key not in seen:
                    seen.add(key)
                    found.append(_wrapped_finding(name, steps, rec, made))
        for steps, rec, what in judged:
            slow = _frozen(steps)
            if slow is None:
                continue
            made = _made(probe, run, rec, steps[slow & (steps > 0)])
            key = made[:2] if made is not None else (rec.file, rec.line)
            if key in seen:
                continue  # the cosine and the sine of one table, q and k turned by it: one finding
            seen.add(key)
            found.append(_finding(what, steps, slow, rec, made))
        return found

    return locate.Reader(keep, judge)


def _kept_tensors(model: nn.Module) -> dict[int, tuple[str, Tensor]]:
    """``id -> (name, tensor)`` of the floating buffers and tensor attributes of every module."""
    kept: dict[int, tuple[str, Tensor]] = {}
    for path, module in model.named_modules():
        for name, t in held_tensors(module):
            if (t.is_floating_point() or t.is_complex()) and t.numel():
                kept.setdefault(id(t), (f"{path}.{name}" if path else name, t))
    return kept


def _frequencies(angle: Tensor) -> Tensor | None:
    """The factor (absolute values) along the last axis of ``angle`` (the frequencies), when
    ``angle`` is an outer product of it and at least two rows (positions, time steps, which
    are not judged: a grid from -1 to 1 has a position at or near 0); None otherwise."""
    a = angle.reshape(-1, angle.shape[-1])
    if not bool(a.isfinite().all()):
        return None
    norms = a.norm(dim=1)
    if int((norms > 0).sum()) < 2 or a.shape[1] < 2:
        return None
    top = a[norms.argmax()]
    unit = top / top.norm()
    along = a @ unit
    if float((a - along[:, None] * unit).norm()) > 1e-6 * float(a.norm()):
        return None  # not every row a multiple of one: a phase, two axes side by side, a signal
    return top.abs()


def _table_steps(used: list[tuple[str, Tensor, OpRecord]], steady: float | None = None):
    """``(name, steps, rec)``: the step of each pair's angle from one position to the next, for
    each table (or pair of tables) on the unit circle whose steps are the same at every
    position (within ``steady`` radians; :data:`_STEADY` when None); ``rec`` is the op that
    read it."""
    floats = [(n, t.detach().to(torch.float64), r) for n, t, r in used if t.is_floating_point()]
    for name, t, rec in used:
        if t.is_complex() and bool(torch.allclose(t.abs(), torch.ones(()), atol=1e-5)):
            z = t.detach().to(torch.complex128)
            steps = _steady(z.real, z.imag, steady)
            if steps is not None:
                yield name, steps, rec
    paired: set[str] = set()
    for i, (name, c, rec) in enumerate(floats):
        for other, s, _ in floats[i + 1:]:
            if c.shape == s.shape and _on_circle(c, s):
                steps = _steady(c, s, steady)
                if steps is not None:
                    paired.update((name, other))
                    yield f"{name}`, `{other}", steps, rec
    for name, t, rec in floats:
        if name in paired or t.dim() < 2 or t.shape[-1] % 2:
            continue
        h = t.shape[-1] // 2
        for c, s in ((t[..., 0::2], t[..., 1::2]), (t[..., :h], t[..., h:])):
            if _on_circle(c, s):
                steps = _steady(c, s, steady)
                if steps is not None:
                    yield name, steps, rec
                    break


def _on_circle(c: Tensor, s: Tensor) -> bool:
    return c.numel() >= 3 * _FEWEST and cosine_and_sine(c, s)


def _steady(c: Tensor, s: Tensor, steady: float | None = None) -> Tensor | None:
    """The step of each pair's angle (``atan2(s, c)``) from one row to the next, when it is the
    same for every row (positions along the rows, pairs along the last axis); None otherwise.
    Taken from the products of neighbouring rows (the angle of ``z₁ · conj(z₀)``), not from a
    difference of angles, which loses a tiny step to the rounding of a large angle."""
    c, s = c.reshape(-1, c.shape[-1]), s.reshape(-1, s.shape[-1])
    if c.shape[0] < 3 or c.shape[1] < _FEWEST:
        return None
    diff = torch.atan2(s[1:] * c[:-1] - c[1:] * s[:-1], c[1:] * c[:-1] + s[1:] * s[:-1])
    if float((diff - diff[0]).abs().max()) > (steady or _STEADY):
        return None
    return diff[0].abs()


def _frozen(steps: Tensor) -> Tensor | None:
    """The pairs that do not turn (at least 10⁹ times slower than the fastest), when the
    slowest pair that turns at all is more than 10¹² times slower than the fastest and a
    quarter of the pairs (two at least) do not turn; None otherwise."""
    turning = steps[steps > 0]
    if steps.numel() < _FEWEST or turning.numel() < 2:
        return None
    top = float(turning.max())
    if not math.isfinite(top) or float(turning.min()) >= _SPAN * top:
        return None
    slow = steps < _SLOW * top
    if int(slow.sum()) < max(2, steps.numel() / 4):
        return None  # one odd pair is no ladder gone wrong
    return slow


def _one_ladder(steps: Tensor) -> Tensor:
    """The steps of one ladder, where the table holds it twice (rotary tables repeat their
    frequencies over both halves of the features)."""
    while steps.numel() % 2 == 0 and steps.numel() >= 2 * _FEWEST:
        half = steps.numel() // 2
        if not bool(torch.allclose(steps[:half], steps[half:], atol=1e-6)):
            break
        steps = steps[:half]
    return steps


def _aliased(steps: Tensor) -> bool:
    """Whether the steps of a table's pairs, in the order of its features, go up and down at
    least twice: a ladder of frequencies falls (or rises) steadily, and only frequencies above
    π per position, read back modulo a whole turn, scatter so."""
    if steps.numel() < _FEWEST or not bool(steps.isfinite().all()):
        return False
    diff = steps[1:] - steps[:-1]
    signs = torch.sign(torch.where(diff.abs() > 1e-6, diff, torch.zeros_like(diff)))
    signs = signs[signs != 0]
    return int((signs[1:] != signs[:-1]).sum()) >= 2


def _made_wrapped(probe: Probe, steps: Tensor):
    """``(file, line, op)`` of what the constructor made whose values, taken modulo a whole
    turn (folded to [0, π]), are the table's steps: the frequencies, above π per position."""
    for made in probe.built:
        value = made.value
        if not isinstance(value, Tensor) or not value.is_floating_point() \
                or value.numel() != steps.numel():
            continue
        v = value.detach().to(torch.float64).flatten().abs()
        for freq in (v, 1 / v):
            turned = torch.remainder(freq, 2 * math.pi)
            folded = torch.minimum(turned, 2 * math.pi - turned)
            if bool(torch.allclose(folded, steps, atol=2 * _WRAPPED)) and float(freq.max()) > math.pi:
                return made.file, made.line, made.op
    return None


def _wrapped_finding(name: str, steps: Tensor, rec: OpRecord, made) -> Diagnostic:
    made_text = (f"; the frequencies were made at {made[0]}:{made[1]} (`{made[2]}`)"
                 if made is not None else "")
    shown = ", ".join(f"{float(x):.2f}" for x in steps[:6])
    message = (f"the table `{name}` read at {rec.file}:{rec.line} turns its feature pairs by steps "
               f"per position that go up and down ({shown}, ... radians): its frequencies are "
               f"above π per position, so each pair's angle wraps around a whole turn between "
               f"neighbouring positions and positions far apart hold the same values. A table's "
               f"frequencies fall steadily from 1 radian per position to one base slower{made_text}")
    hint = ("Divide the positions by the ladder, `position / base ** (torch.arange(0, d, 2) / d)`, "
            "or multiply them by its inverse, `base ** (-torch.arange(0, d, 2) / d)`")
    return diagnostic("position-frequencies", message, hint, rec=rec,
                      made_at=(made[0], made[1]) if made is not None else None)


def _made(probe: Probe, run: locate.Run, rec: OpRecord, tiny: Tensor):
    """``(file, line, op)`` of the first op that made values in proportion to the pairs'
    steps ``tiny`` (the frequencies) or to their inverses (the wavelengths): among what the
    constructor made, then in the forward before ``rec``; None when none did."""
    tiny = torch.unique(tiny)[-6:]
    for made in probe.built:
        if _proportional(made.value, tiny):
            return made.file, made.line, made.op
    for step in run.steps:
        if step.rec.index >= rec.index:
            break
        if any(_proportional(t, tiny) for t in step.outputs if isinstance(t, Tensor)):
            return step.rec.file, step.rec.line, step.rec.op
    return None


def _proportional(value: Tensor, tiny: Tensor) -> bool:
    if not value.is_floating_point() or not 0 < value.numel() <= _SEARCHED:
        return False
    v = value.detach().to(torch.float64).abs().flatten()
    v = v[v.isfinite() & (v > 0)]
    for candidates in (v, 1 / v):
        known = torch.unique(candidates)
        if known.numel() < tiny.numel():
            continue
        # every value of ``known`` taken as the largest tiny step, the rest looked up
        scale = known / tiny[-1]
        wanted = scale[:, None] * tiny[None, :]
        at = torch.searchsorted(known, wanted).clamp(max=known.numel() - 1)
        below = (at - 1).clamp(min=0)
        near = torch.minimum((known[at] - wanted).abs(), (known[below] - wanted).abs())
        if bool((near <= 1e-5 * wanted).all(dim=1).any()):
            return True
    return False


def _finding(what: str, steps: Tensor, slow: Tensor, rec: OpRecord, made) -> Diagnostic:
    n, count = steps.numel(), int(slow.sum())
    turning = steps[steps > 0]
    made_text = (f"; the frequencies were made at {made[0]}:{made[1]} (`{made[2]}`)"
                 if made is not None else "")
    verb = "make" if what.startswith("the angles") else "is"
    message = (f"{what} at {rec.file}:{rec.line} {verb} a sinusoidal table of which {count} of its "
               f"{n} feature pairs turn at least 10⁹ times slower than the fastest "
               f"(steps from {float(turning.max()):.3g} down to {float(turning.min()):.3g} "
               f"per row): they hold the same value at every position and carry nothing of where a "
               f"token is. A table's frequencies fall from the fastest to one base slower (10⁴ "
               f"in the textbook) and every pair turns{made_text}")
    hint = ("Check the exponent's parentheses: `base ** (torch.arange(0, d, 2) / d)`, not "
            "`base ** torch.arange(0, d, 2) / d`; `-math.log(base) / (d // 2)`, not "
            "`-math.log(base) / d // 2`")
    return diagnostic("position-frequencies", message, hint, rec=rec,
                      made_at=(made[0], made[1]) if made is not None else None)
