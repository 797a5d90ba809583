"""Textbook equivalence: each attention's weights recomputed as softmax(q·kᵀ/√d + what the code
added) from the values of a recorded float64 run, and compared with the weights the code used.

The run is recorded as ``locate`` records one (snapshots of every op's outputs); the attentions
are found on it as the trace finds them (``analysis.graph``). For each one whose scores are a
plain product of two operands, the values say what happened between q, k and the softmax, op
by op, without reading names:

- a step whose output is a positive multiple of its input, up to the order of the elements
  (transposes, views, ``q *= scale``, ``scores / math.sqrt(d)``, a scale folded into the query
  before its heads are split), contributes its factor;
- an addition puts a term on the scores (a bias, a relative-position table, an additive mask);
  masking fills positions;
- any other op (a soft cap, a norm) ends the reading: nothing is said.

The factors multiply to the scale the code applied. The textbook's is 1/√d, d the size q·k
sums over; where they differ, the weights are recomputed with the textbook scale and the terms
the code added, the largest difference is measured, and the finding names the part that differs
(no scale, twice the scale, the root of another size) at the op that applied the last factor,
with each factor's line. An addition of the same non-zero term twice on the way to one softmax
is another finding: a bias added twice. A third: a term made of parameters or tables (not of
the input) added to the scores that is the same at every position of the axis the softmax
normalises, which the softmax removes (a key bias broadcast over the queries). Where the reading is not sure (a learned or tensor
factor, cosine similarities, dot products of raw inputs, factors that cancel), nothing is said.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..analysis.facts import Analysis
from ..analysis.graph import Graph, contracted_size, find_attentions
from ..base.diagnostics import Diagnostic
from ..base.ops import (
    ADDS,
    CASTS,
    DISTANCES,
    DROPOUTS,
    EINSUMS,
    EXPANDS,
    MASKED_FILLS,
    MULS,
    PERMUTES,
    PLAIN_MATMULS,
    RESHAPES,
    SOFTMAXES,
    WHERES,
    base_name,
)
from ..base.records import OpRecord, TensorArg
from ..rules.registry import diagnostic
from ..rules.scale_cause import scale_origin
from ..rules.scale import (PRECEDENCE, cosine, explain_scale, precedence_slip, projected,
                           scalar_argument, scores_steps, temperature, tracked_slot)
from . import locate
from .inverted import mask_builder
from .probe import Probe

#: Ops between the softmax and the values that change no weight.
_NEUTRAL = CASTS | DROPOUTS | RESHAPES | PERMUTES | EXPANDS
#: Steps followed back from q or k.
_DEPTH = 16
_RTOL = 1e-6


def textbook_attention(probe: Probe) -> locate.Reader:
    """The textbook comparison of every attention, read from a recorded run (``locate.Reader``)."""
    addends: dict[int, list[Tensor | None]] = {}

    def keep_addends(rec, outs, args, kwargs) -> None:  # a parameter added has no producer
        if rec.op in ADDS:
            addends[rec.index] = [a.detach().clone() if isinstance(a, Tensor) else None
                                  for a in args[:2]]

    def judge(run: locate.Run) -> list[Diagnostic]:
        values = {step.rec.index: step.outputs for step in run.steps}
        graph = Graph(run.records)
        softmaxes = [r for r in run.records if r.op in SOFTMAXES]
        if not softmaxes:
            return []
        analysis = Analysis(run.records, probe.dims)
        found: list[Diagnostic] = []
        seen: set[tuple] = set()
        for att in find_attentions(softmaxes, graph):
            reading = _Reading(analysis, values, addends, att, probe.built)
            verdict = reading.judge() if att.scores is not None else reading.nearest_last()
            if isinstance(verdict, Diagnostic) and (verdict.file, verdict.line) not in seen:
                seen.add((verdict.file, verdict.line))  # one finding for a layer repeated
                found.append(verdict)
        return found

    return locate.Reader(keep_addends, judge)


class _Reading:
    """One attention's run, read step by step from q and k to the softmax."""

    def __init__(self, analysis: Analysis, values: dict[int, list[Tensor]],
                 addends: dict[int, list[Tensor | None]], att, built: tuple = ()):
        self.analysis = analysis
        self.built = built  # what the constructor made (``record.built``)
        self.graph = analysis.graph
        self.values = values
        self.addends = addends
        self.att = att

    def value(self, meta) -> Tensor | None:
        made_by = meta._made_by
        outs = self.values.get(made_by) if made_by is not None else None
        return outs[meta._slot] if outs is not None and meta._slot < len(outs) else None

    def judge(self) -> Diagnostic | bool | None:
        """A finding, True when the weights are the textbook's, None when not sure."""
        scores = self.att.scores
        if scores is None:
            return None
        weights = self.values.get(self.att.softmax.index)
        if not weights or not all(bool(torch.isfinite(w).all()) for w in weights
                                  if isinstance(w, Tensor) and w.is_floating_point()):
            return None  # weights that hold a NaN or an Inf say nothing of a scale: non-finite's
        far = self.bias_favours_far(scores, weights[0])
        if far is not None:
            return far
        product = scores.rec
        if not (product.op in PLAIN_MATMULS or (product.op in EINSUMS and len(product.inputs) == 2)):
            return None
        d = contracted_size(product)
        q_meta, k_meta = product.inputs[0], product.inputs[1]
        q_steps, k_steps = self.operand_factors(q_meta), self.operand_factors(k_meta)
        path = self.path_steps(scores.path)
        if q_steps is None or k_steps is None or path is None or not d:
            return None
        factors, terms = path
        if any(rec.op not in _NEUTRAL for use in self.att.uses for rec in use.path):
            return None  # the weights change after the softmax: unnormalized-attention's
        twice = self.bias_twice(terms) or self.mask_fills_every_key(scores)
        if twice is not None:
            return twice
        cancelled = self.bias_cancelled(scores)
        if cancelled is not None:
            return cancelled
        steps = [(rec, f, "q") for rec, f in q_steps] + [(rec, f, "k") for rec, f in k_steps] \
            + [(rec, f, "scores") for rec, f in factors]
        total = math.prod(f for _, f, _ in steps)
        right = d ** -0.5
        if math.isclose(total, right, rel_tol=2e-3):
            return True
        unit = [s for s in steps if not math.isclose(s[1], 1.0, rel_tol=1e-9)]
        if total < 0:  # whatever the size: the least similar keys get the most weight
            return self.scale_finding(product, unit, total, right, d, "negated")
        if (temperature(scores.path) or cosine(self.graph, q_meta, k_meta)
                or not (projected(self.analysis, q_meta) and projected(self.analysis, k_meta))):
            return None  # the scale is the model's to learn, or none is owed
        if math.isclose(total, 1.0, rel_tol=2e-3) and unit:
            return None  # factors that cancel
        named = "none" if not unit else explain_scale(total, self.analysis.dims, d, "d")
        if named is None:
            return None  # a scale no size explains: a choice of the model's, not a slip
        return self.scale_finding(product, unit, total, right, d, named)

    def nearest_last(self) -> Diagnostic | None:
        """Weights taken from a distance between queries and keys (``torch.cdist``) that only
        positive factors, fills and moves separate from the softmax: the farthest key gets the
        most weight. Attention by distance takes the softmax of minus the distance."""
        meta = self.att.softmax.inputs[0]
        steps = []
        for _ in range(_DEPTH):
            rec = self.graph.producer(meta)
            if rec is None or rec.error is not None or not rec.inputs:
                return None
            if rec.op in DISTANCES:
                break
            slot = _single_input(rec)
            if slot is None:
                return None
            f = None if rec.op in MASKED_FILLS else _multiple(
                self.value(rec.inputs[slot]), self.value(rec.outputs[0]) if rec.outputs else None)
            if f is None and rec.op not in MASKED_FILLS and rec.op not in _NEUTRAL:
                return None  # a negation (f < 0 is no multiple), a soft cap: another reading
            steps.append(rec)
            meta = rec.inputs[slot]
        else:
            return None
        scaled = any(r.op not in _NEUTRAL and r.op not in MASKED_FILLS for r in steps)
        message = (f"the attention weights are a softmax of the distance between queries and keys "
                   f"(`{rec.source or rec.op}` at line {rec.line}) with no minus sign: the "
                   f"farthest key gets the most weight and the nearest the least"
                   f"{'' if scaled else ', and the distances are not scaled'}")
        hint = ("Attend by closeness: softmax(-torch.cdist(q, k) * scale), the scale the size of "
                "the axis the distance sums over to the power -1/2.")
        return diagnostic("attention-textbook", message, hint, rec=rec, part="distance")

    # -- reading the values ----------------------------------------------------------------

    def operand_factors(self, meta) -> list[tuple[OpRecord, float]] | None:
        """The factors applied to q (or k) since it was made: steps whose output is a
        positive multiple of their one input, up to the order of the elements."""
        found = []
        for _ in range(_DEPTH):
            rec = self.graph.producer(meta)
            if rec is None or rec.error is not None or not rec.inputs:
                return found
            slot = _single_input(rec)
            if slot is None:
                return found
            f = _multiple(self.value(rec.inputs[slot]),
                          self.value(rec.outputs[0]) if rec.outputs else None, signed=True)
            if f is None:
                return found
            if not math.isclose(f, 1.0, rel_tol=1e-9):
                if _tensor_factor(rec, slot):
                    return None  # a learned or computed factor: not sure
                found.append((rec, f))
            meta = rec.inputs[slot]
        return found

    def path_steps(self, path) -> tuple[list, list] | None:
        """The factors and the added terms between the product and the softmax; None when a
        step is neither (a soft cap, a norm)."""
        factors, terms = [], []
        for rec in path:
            slot = tracked_slot(rec)
            if slot is None or not rec.outputs:
                return None
            if rec.op in MASKED_FILLS or rec.op in WHERES:
                continue  # fills positions (a fill of the largest float is no factor)
            before, after = self.value(rec.inputs[slot]), self.value(rec.outputs[0])
            f = _multiple(before, after)
            if f is not None:
                if not math.isclose(f, 1.0, rel_tol=1e-9):
                    if _tensor_factor(rec, slot):
                        return None
                    factors.append((rec, f))
                continue
            if rec.op in ADDS and len(rec.inputs) == 2 and after is not None:
                pair = self.addends.get(rec.index) or []
                other = [a for a in pair if a is not None and a.shape != after.shape] \
                    if len(pair) == 2 else []
                if len(other) == 1 or (len(pair) == 2 and all(a is not None for a in pair)):
                    terms.append((rec, other[0] if len(other) == 1 else _other(pair, before)))
                continue
            return None
        return factors, terms

    # -- findings --------------------------------------------------------------------------

    def bias_twice(self, terms) -> Diagnostic | None:
        for i, (first, a) in enumerate(terms):
            for second, b in terms[i + 1:]:
                if _bias(a) and _bias(b) and a.shape == b.shape and torch.equal(a, b):
                    line = f"line {first.line}" if first.line else "an earlier op"
                    message = (f"the same term is added to the attention scores twice: at {line} "
                               f"and again here, so the weights are softmax(q·kᵀ/√d + 2·bias) "
                               f"instead of softmax(q·kᵀ/√d + bias)")
                    hint = "Add the bias (or position table, or mask) to the scores once."
                    return diagnostic("attention-textbook", message, hint, rec=second,
                                      part="bias", first=first.index)
        return None

    def mask_fills_every_key(self, scores) -> Diagnostic | None:
        """A mask built in the forward that fills every key of every query on the way to the
        softmax: each row of scores is one value, so every weight is 1/keys whatever q and k
        (an inverted mask keeps only the positions it means to exclude). A mask handed in is
        not judged: its values were made by shapetrace."""
        for rec, slot, pos, out_pos in scores_steps(scores):
            if rec.op not in MASKED_FILLS and rec.op not in WHERES:
                continue
            before, after = self.value(rec.inputs[slot]), self.value(rec.outputs[0])
            if before is None or after is None or after.shape[out_pos] < 2 \
                    or not _constant_along(after, out_pos) or _constant_along(before, pos):
                continue
            built = mask_builder(self.graph, rec, self.values, elsewhere=False, handed=False)
            if built is None:
                return None
            message = (f"the mask {f'built at line {built.line} ' if built.line else ''}fills "
                       f"every key of every query here (axis {out_pos} of {tuple(after.shape)}), "
                       f"so each row of scores is one value and the softmax gives every key the "
                       f"same weight, 1/{after.shape[out_pos]}, whatever q and k: the weights are "
                       f"not the textbook's softmax(q·kᵀ/√d)")
            hint = ("The mask excludes every position: fill only the ones to exclude (padding, "
                    "future keys). A condition written the wrong way round (`x < 0` for "
                    "`x >= 0`, `mask == 1` for `mask == 0`) keeps only what it means to drop.")
            return diagnostic("attention-textbook", message, hint, rec=rec, part="mask",
                              made_at=(built.file, built.line) if built.line else None)
        return None

    def bias_cancelled(self, scores) -> Diagnostic | None:
        """A term added to the scores that is the same at every key: the softmax over the keys
        removes it, so it changes no weight (a key bias broadcast over the queries, ``b[:, None]``
        where ``b[None, :]`` was meant). Judged only for a term made of parameters or tables,
        not of the input (a term computed from q or x, such as ``-|q|²/2``, may be constant
        along the keys by design), with more than two values (not a mask)."""
        for rec, slot, _, out_pos in scores_steps(scores):
            if rec.op in ADDS and len(rec.inputs) == 2:
                found = self._cancelled_term(rec, slot, out_pos)
                if found is not None:
                    return found
        return None

    def _cancelled_term(self, rec: OpRecord, slot: int, pos: int) -> Diagnostic | None:
        pair = self.addends.get(rec.index) or []
        after = self.value(rec.outputs[0])
        if len(pair) != 2 or after is None or pair[1 - slot] is None:
            return None
        term, meta = pair[1 - slot], rec.inputs[1 - slot]
        if not _bias(term) or self.analysis.lineage.batched(meta) \
                or self.graph.made_of(meta, self.att.scores.rec.index):
            return None
        try:
            full = torch.broadcast_to(term, after.shape)
        except RuntimeError:
            return None
        first = full.narrow(pos, 0, 1)
        if after.shape[pos] < 2 or not bool((full == first).all()):
            return None  # it varies along the keys, as a key bias or a position table does
        built = self.graph.producer(meta)
        at = (f" (built at line {built.line}: `{built.source}`)"
              if built is not None and built.line and built.line != rec.line and built.source else "")
        message = (f"the term added to the attention scores here{at} is the same for every key: "
                   f"it varies only along other axes, and the softmax normalises over the keys "
                   f"(axis {pos} of {tuple(after.shape)}, size {after.shape[pos]}), which removes "
                   f"it: the weights are the same as if it were never added")
        hint = ("Broadcast the bias along the query axis so that it varies over the keys: a (T,) "
                "key bias is added as bias[None, :] (or bias.view(1, 1, 1, T)), not bias[:, None].")
        return diagnostic("attention-textbook", message, hint, rec=rec, part="bias-axis",
                          built=built.index if built is not None else None)

    def bias_favours_far(self, scores, weights: Tensor) -> Diagnostic | None:
        """A term added to the scores that is a slope times the distance between query and key
        (ALiBi's bias), for every head, with the slope's sign that gives the farther keys the
        larger scores: read on the positions the softmax weighs (a causal mask's hidden keys
        left out) as ``s * (j - i)`` plus a constant per query where only earlier keys are
        weighed, or ``s * |i - j|`` plus one where both sides are. A term of the input, or one
        that is not exactly such a line (a learned table of offsets), says nothing."""
        for rec, slot, _, out_pos in scores_steps(scores):
            pair = self.addends.get(rec.index) or []
            after = self.value(rec.outputs[0])
            if rec.op not in ADDS or len(pair) != 2 or after is None or pair[1 - slot] is None \
                    or after.shape != weights.shape or after.dim() < 2 or out_pos == 0:
                continue
            term, meta = pair[1 - slot], rec.inputs[1 - slot]
            if not term.is_floating_point() or self.analysis.lineage.batched(meta) \
                    or self.graph.made_of(meta, scores.rec.index):
                continue
            try:
                full = torch.broadcast_to(term, after.shape)
            except RuntimeError:
                continue
            grid = full.movedim((out_pos - 1, out_pos), (-2, -1))
            kept = grid.isfinite() & (weights.movedim((out_pos - 1, out_pos), (-2, -1)) > 0)
            slope = _distance_slope(grid.reshape(-1, *grid.shape[-2:]),
                                    kept.reshape(-1, *kept.shape[-2:]))
            if slope is None:
                continue
            made = self._slope_made(meta)
            at = f" (made at line {made.line}: `{made.source}`)" if made is not None and made.source else ""
            origins = self._factors_made(made) if made is not None else []
            if origins:
                at += f"; its factors come from {' and '.join(origins)}"
            message = (f"the term added to the attention scores here{at} grows with the distance "
                       f"between query and key, by {slope:.3g} per position (the first head's "
                       f"slope): the farther a key, the larger its score, so attention leans to "
                       f"the most distant keys. A distance bias (ALiBi) subtracts slope × "
                       f"distance: its slopes are negative, or the offset is key minus query")
            hint = ("Make the bias fall with distance: bias = -slope * (i - j) for a query at i "
                    "and an earlier key at j (slopes positive), or slope * (j - i).")
            return diagnostic("attention-textbook", message, hint, rec=rec, part="bias-sign",
                              made_at=(made.file, made.line) if made is not None and made.line else None)
        return None

    def _slope_made(self, meta) -> OpRecord | None:
        """The product of slopes and offsets the term was made from: the nearest product found
        walking back from the term (through additions of a mask, moves and casts)."""
        frontier, seen = [meta], set()
        for _ in range(_DEPTH):
            nxt = []
            for m in frontier:
                rec = self.graph.producer(m)
                if rec is None or rec.index in seen:
                    continue
                seen.add(rec.index)
                if rec.op in MULS or rec.op in EINSUMS or rec.op in PLAIN_MATMULS \
                        or base_name(rec.op) == "outer":
                    return rec
                nxt += list(rec.inputs)
            frontier = nxt
        return None

    def _factors_made(self, product: OpRecord) -> list[str]:
        """``file:line`` where each operand of ``product`` was made: the op that made it, past
        the ops that only move it, or, for a tensor made before the forward (a buffer of
        slopes), the line of the constructor that made its values (``record.built``)."""
        out = []
        for meta in product.inputs:
            rec, moved = self.graph.producer(meta), None
            while rec is not None and rec.op in _NEUTRAL and rec.inputs:
                moved, rec = rec, self.graph.producer(rec.inputs[0])
            if rec is not None:
                out.append(f"{rec.file}:{rec.line}")
                continue
            value = self.value(moved.outputs[0]) if moved is not None else None
            made = next((m for m in self.built if value is not None
                         and m.value.numel() == value.numel()
                         and torch.allclose(m.value.double().flatten(), value.double().flatten())),
                        None)
            if made is not None:
                out.append(f"{made.file}:{made.line}")
        return out

    def scale_finding(self, product, unit, total, right, d, named) -> Diagnostic:
        culprit = max((rec for rec, _, _ in unit), key=lambda r: r.index, default=None)
        target = culprit if culprit is not None else product
        size = f"d = {d}, the size q·k sums over"
        if not unit:
            what = "not scaled at all"
        elif named == "negated":
            what = "negated: the softmax gives the least similar keys the most weight"
        elif math.isclose(total, right * right, rel_tol=2e-3):
            what = "scaled twice by 1/√d"
        else:
            what = f"scaled by {named}" if named != "ambiguous" else f"scaled by {total:.4g}"
        where = "; ".join(f"×{f:.4g} on {on} at line {rec.line}" for rec, f, on in unit if rec.line)
        differs = self.weight_difference(total, right)
        message = (f"attention weights differ from the textbook softmax(q·kᵀ/√d + the terms the "
                   f"code adds){differs}: the scores are {what} (factor {total:.4g} in all"
                   f"{': ' + where if where else ''}) instead of 1/√d = {right:.4g} ({size})")
        origin = scale_origin(culprit) if culprit is not None and len(unit) == 1 else None
        if origin is not None:
            message += f"; the factor is chosen at {origin[0]}:{origin[1]}: `{origin[2]}`"
        hint = "Scale the scores once by 1/math.sqrt(head_size), the size of the axis q·k sums over."
        if named == "negated" and math.isclose(total, -d / 2, rel_tol=2e-3):
            hint = ("`d * -0.5` multiplies by -d/2; the scale is `d ** -0.5` (1/math.sqrt(d)), "
                    "d the size of the axis q·k sums over.")
        elif precedence_slip(named, "d"):
            hint = PRECEDENCE
        return diagnostic("attention-textbook", message, hint, rec=target, part="scale",
                          factor=total, expected=right,
                          made_at=origin[:2] if origin is not None else None)

    def weight_difference(self, total: float, right: float) -> str:
        """`` by up to X`` between the code's weights and the textbook's, when the scores keep
        their layout to the softmax (no transpose between them); else ""."""
        att = self.att
        x = self.value(att.softmax.inputs[0])
        s = self.value(att.scores.rec.outputs[0])
        w = self.value(att.softmax.outputs[0])
        if x is None or s is None or w is None or x.shape != s.shape:
            return ""
        raw = s / math.prod(f for _, f in (self.operand_factors(att.scores.rec.inputs[0]) or [])) \
            / math.prod(f for _, f in (self.operand_factors(att.scores.rec.inputs[1]) or []))
        textbook = torch.softmax(x + (right - total) * raw, dim=att.dim)
        diff = (textbook - w).abs().nan_to_num(0.0).amax().item()
        return f" by up to {diff:.3g}" if diff > 0 else ""


def _constant_along(t: Tensor, pos: int) -> bool:
    """Whether every row of ``t`` along axis ``pos`` holds one value."""
    return t.shape[pos] > 0 and bool((t == t.narrow(pos, 0, 1)).all())


def _other(pair: list[Tensor], carried: Tensor | None) -> Tensor | None:
    """Of an addition's two operands of one shape, the one that is not the scores."""
    if carried is None:
        return None
    rest = [a for a in pair if not torch.equal(a, carried)]
    return rest[0] if len(rest) == 1 else None


def _bias(t: Tensor | None) -> bool:
    """A term that shifts scores: finite, not zero, and not an additive mask (two values)."""
    return (t is not None and t.is_floating_point() and bool(torch.isfinite(t).all()) and bool(t.abs().amax() > 0)
            and t.unique().numel() > 2)


def _single_input(rec: OpRecord) -> int | None:
    """The one input of ``rec`` that has as many elements as its output (the others, if any,
    one-element factors); None otherwise."""
    if not rec.outputs:
        return None
    n = math.prod(rec.outputs[0].shape)
    full = [i for i, m in enumerate(rec.inputs) if math.prod(m.shape) == n]
    small = [i for i, m in enumerate(rec.inputs) if math.prod(m.shape) == 1]
    if len(full) != 1 or len(full) + len(small) != len(rec.inputs):
        return None
    return full[0]


def _tensor_factor(rec: OpRecord, slot: int) -> bool:
    """Whether the factor a step applied is a tensor (a learned temperature, a computed
    norm), not a number the call passed."""
    if scalar_argument(rec, slot) is not None:
        return False
    return any(isinstance(a, TensorArg) and a.index != slot for a in rec.args) or len(rec.inputs) > 1


def _multiple(before: Tensor | None, after: Tensor | None, signed: bool = False) -> float | None:
    """c > 0 when ``after`` holds ``c`` times the elements of ``before`` (in any order); with
    ``signed``, c < 0 too (``q * (d * -0.5)``: the order of the elements reversed)."""
    if before is None or after is None or before.numel() != after.numel() or before.numel() < 2:
        return None
    if not (before.is_floating_point() and after.is_floating_point()):
        return None
    a = before.detach().double().flatten().sort().values
    b = after.detach().double().flatten().sort().values
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return None
    norm = float(a @ a)
    if norm == 0:
        return None
    c = float(a @ b) / norm
    if not (c <= 0 or float((b - c * a).norm()) > _RTOL * max(float(b.norm()), 1e-300)):
        return c
    if signed:  # a negative multiple holds the elements in the reverse order
        b = b.flip(0)
        c = float(a @ b) / norm
        if c < 0 and float((b - c * a).norm()) <= _RTOL * max(float(b.norm()), 1e-300):
            return c
    return None


def _distance_slope(grid: Tensor, kept: Tensor) -> float | None:
    """The slope by which ``grid`` (rows: queries, columns: keys; one grid per head) grows with
    the distance between query and key on the ``kept`` positions, when every grid is exactly a
    line in it with a slope of that sign (far keys favoured); None otherwise."""
    n, rows, cols = grid.shape
    if rows < 3 or cols < 3 or rows != cols:
        return None
    i = torch.arange(rows).view(-1, 1)
    j = torch.arange(cols).view(1, -1)
    pairs = kept[:, :, 1:] & kept[:, :, :-1]  # neighbouring keys both weighed
    if not bool(pairs.any(dim=(1, 2)).all()):
        return None
    step = grid[:, :, 1:] - grid[:, :, :-1]
    left = (j[:, 1:] <= i).expand(rows, cols - 1)  # both keys at or before the query
    later = bool((kept & (j > i)).any())
    slopes = []
    for h in range(n):
        before = step[h][pairs[h] & left]
        after = step[h][pairs[h] & ~left]
        if before.numel() < 2 or (later and after.numel() < 2):
            return None
        s = float(before[0])  # grows toward the query: the distance's slope is -s
        tol = 1e-6 * max(1.0, abs(s))
        if not abs(s) > tol or not bool(((before - s).abs() <= tol).all()):
            return None
        if later and not bool(((after + s).abs() <= tol).all()):
            return None  # not s * |i - j|: a line in j - i across both sides, or no line
        slopes.append(-s)
    if not all(v > 0 for v in slopes):
        return None
    return slopes[0]
