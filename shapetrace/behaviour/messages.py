"""The findings of the behaviour checks: messages, hints and dependency grids.

Every Diagnostic is made by the registry's factory (``shapetrace.rules.registry.diagnostic``):
code and severity come from the rule table. The place is the user's source line of the op that
leaks, read from its :class:`~shapetrace.base.records.OpRecord`; the op is shown as the user wrote
it (``@`` for ``a @ b``, see ``shapetrace.base.ops.display_name``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..base.diagnostics import Diagnostic
from ..base.dims import Dims
from ..base.ops import (
    DROPOUTS,
    GAUSSIAN_DRAWS,
    LOG_SOFTMAXES,
    MASKED_FILLS,
    MHA_FORWARD,
    MATMULS,
    POSITION_OPS,
    SDPA,
    SOFTMAXES,
    TRAILING_NORMS,
    WHERES,
    base_name,
    display_name,
    reduced_axes,
)
from ..base.records import OpRecord, TensorArg
from ..rules.fixes import built_line, constructor_of
from ..rules.registry import diagnostic
from .probe import Probe
from .results import DependencyResult

UNUSED, USED, LEAK = 0, 1, 2
_SYMBOLS = {UNUSED: "·", USED: "■", LEAK: "✗"}


# ---------------------------------------------------------------------------------------------
# Where: the op, its source line, and what it reduces over
# ---------------------------------------------------------------------------------------------


@dataclass
class Where:
    file: str | None = None
    line: int | None = None
    op: str | None = None
    module: str | None = None
    segment: str = ""  # the source expression, "F.softmax(att, dim=-1)"
    text: str = ""  # "`F.softmax(att, dim=-1)` (F.softmax over dim=-1, axis T) at model.py:31"

    def place(self) -> dict[str, Any]:
        """The keyword arguments that place a diagnostic."""
        return {"file": self.file, "line": self.line, "module": self.module, "op": self.op}


def where(probe: Probe, rec: OpRecord | None) -> Where:
    if rec is None or rec.site is None:
        return Where(module=(rec.module or None) if rec is not None else probe.root)
    segment = rec.source
    name = display_name(rec.op, segment)
    text = f"`{segment}` ({_describe(rec, name, probe.dims)}) at {rec.file}:{rec.line}"
    return Where(rec.file, rec.line, name, rec.module or None, segment, text)


def _reduced(rec: OpRecord) -> tuple[list[int], str] | None:
    """The axes a reduction / softmax / norm runs over and how the call named them
    (``"dim=1"``, ``"the last 2 axes"``), or None when the op is not one."""
    found = reduced_axes(rec)
    if found is None:
        return None
    axes, named = found
    if rec.op not in TRAILING_NORMS:
        return axes, "all axes" if named is None else f"dim={named}"
    k = len(axes)
    return axes, f"the last {k} axes" if k > 1 else "the last axis"


def _describe(rec: OpRecord, name: str, dims: Dims) -> str:
    """``F.softmax over dim=0, axis B``: the op, and the named axes it reduces over."""
    found = _reduced(rec)
    if not found:
        return name
    axes, how = found
    labels = ", ".join(dims.label(rec.inputs[0].shape[a]) for a in axes)
    return f"{name} over {how}, axis {labels}" if len(axes) == 1 else f"{name} over {how}, axes {labels}"


def _axis_names(rec: OpRecord | None, dims: Dims) -> set[str]:
    found = reduced_axes(rec) if rec is not None else None
    if not found:
        return set()
    return {dims.label(rec.inputs[0].shape[a]) for a in found[0]}


# ---------------------------------------------------------------------------------------------
# Grids
# ---------------------------------------------------------------------------------------------


def _grid(used: Tensor, expected: str, axis: str, what: str) -> dict[str, Any]:
    n_rows, n_cols = used.shape
    cells = []
    for r in range(n_rows):
        row = []
        for c in range(n_cols):
            allowed = c <= r if expected == "lower" else c == r
            row.append(UNUSED if not used[r, c] else (USED if allowed else LEAK))
        cells.append(row)
    return {"rows": [str(i) for i in range(n_rows)], "cols": [str(i) for i in range(n_cols)],
            "row_axis": f"output {what} ({axis})", "col_axis": f"input {what} ({axis})",
            "expected": expected, "cells": cells}


def grid_text(data: Mapping[str, Any]) -> str:
    """A dependency grid as plain text: ``■`` used, ``·`` unused, ``✗`` used but forbidden.

    Rows are output positions (or samples), columns input ones.
    """
    grid = data.get("grid") if "grid" in data else data
    if not grid:
        return ""
    rows, cols, cells = grid["rows"], grid["cols"], grid["cells"]
    width = max(len(r) for r in rows) if rows else 1
    col_width = max([len(c) for c in cols] + [1])
    lines = [f"rows: {grid.get('row_axis', 'output')}, columns: {grid.get('col_axis', 'input')}",
             " " * (width + 1) + " ".join(c.rjust(col_width) for c in cols)]
    for label, row in zip(rows, cells):
        lines.append(label.rjust(width) + " " + " ".join(_SYMBOLS[v].rjust(col_width) for v in row))
    lines.append("■ used  · unused  ✗ leak")
    return "\n".join(lines)


def _sources_text(dep: DependencyResult, kind: str) -> str:
    return ", ".join(f"`{n}`" for n in _leaking(dep, kind)) or "the input"


def _leaking(dep: DependencyResult, kind: str) -> list[str]:
    """The inputs through which outputs see other samples (``batch``) or later positions."""
    names = []
    for p in dep.pairs:
        grid = p.batch if kind == "batch" else p.time
        if grid is None:
            continue
        bad = grid & ~torch.eye(*grid.shape, dtype=torch.bool) if kind == "batch" else grid.triu(1)
        if bad.any() and p.source not in names:
            names.append(p.source)
    return names


# ---------------------------------------------------------------------------------------------
# Diagnostics
# ---------------------------------------------------------------------------------------------


def causal_leak(probe: Probe, grid: Tensor | None, dep: DependencyResult, rec: OpRecord | None,
                records: Sequence[OpRecord] = (), *, inside: bool = False,
                inverted=None) -> Diagnostic:
    """A causal leak seen in the outputs' T x T grid, or (``inside``) in an intermediate tensor
    when no output has a time axis (a model that returns the last position's logits only).
    ``records`` are those of the run the op was found in, for the hint. ``inverted`` (an
    ``inverted.Inverted``): the scores were masked the wrong way round, and the finding is at
    the op that applied the mask."""
    if inverted is not None and grid is not None and not inside and bool(grid.triu(1).any()):
        return _inverted_mask(probe, grid, dep, rec, inverted)
    at = where(probe, rec)
    leaks = [tuple(ix) for ix in grid.triu(1).nonzero().tolist()] if grid is not None else []
    T = probe.T
    if inside:
        message = ("no output has a time axis (T), so the tensors inside were checked: "
                   f"{at.text or 'an op'} sees later positions")
        if leaks:
            row, col = min(leaks)
            message += f" (its position {row} depends on input position {col})"
    else:
        row, col = min(leaks)
        message = (f"output position {row} depends on input position {col} of "
                   f"{_sources_text(dep, 'time')}, a later one ({len(leaks)} of the "
                   f"{T * (T - 1) // 2} future pairs over T leak)")
        message += (f"; the first op that sees the future is {at.text}" if at.text
                    else "; no single op could be named")
    data: dict[str, Any] = {"leaks": len(leaks)}
    if not inside:
        data["sources"] = _leaking(dep, "time")
    if grid is not None:
        data["grid"] = _grid(grid, "lower", "T", "position")
        data["grid_text"] = grid_text(data)
    return diagnostic("causal-leak", message, _causal_hint(probe, rec, records), **at.place(),
                      made_at=_causal_cause(probe, rec, records), **data)


def _inverted_mask(probe: Probe, grid: Tensor, dep: DependencyResult, rec: OpRecord,
                   inverted) -> Diagnostic:
    """At the line that built the mask when it was built in the forward, else where applied."""
    applied, used = where(probe, inverted.applied), where(probe, rec)
    leaks = [tuple(ix) for ix in grid.triu(1).nonzero().tolist()]
    row, col = min(leaks)
    own = "and its own key " if inverted.own else ""
    data: dict[str, Any] = {"leaks": len(leaks), "inverted": not inverted.zeroed,
                            "grid": _grid(grid, "lower", "T", "position")}
    data["grid_text"] = grid_text(data)
    if inverted.cut:  # one entry of the triangle: the index is the line to fix
        at = where(probe, inverted.built)
        message = (f"the causal mask is cut to one entry of its table here (`{at.segment}`): an "
                   f"index where a slice was meant picks a single value, the same for every query "
                   f"and key, so applied by `{applied.segment}` at {applied.file}:{applied.line} it "
                   f"hides no later key, and output position {row} depends on input position {col} "
                   f"of {_sources_text(dep, 'time')} ({len(leaks)} of the "
                   f"{probe.T * (probe.T - 1) // 2} future pairs over T leak)")
        hint = "Slice the table to the scores' size: mask[..., :T, :T], not mask[..., T, T]."
        data["inverted"] = False
        return diagnostic("causal-leak", message, hint, **at.place(), **data)
    if inverted.zeroed:  # multiplied in: the product is the line to fix
        built = where(probe, inverted.built) if inverted.built is not None else None
        made = f" (the mask made at {built.file}:{built.line})" if built is not None else ""
        message = (f"the causal mask is multiplied into the scores here (`{applied.segment}`)"
                   f"{made}: each query's later keys get a score of 0, not -inf, and the softmax "
                   f"still weighs them (exp(0) = 1), so output position {row} depends on input "
                   f"position {col} of {_sources_text(dep, 'time')}, a later one ({len(leaks)} of "
                   f"the {probe.T * (probe.T - 1) // 2} future pairs over T leak); the weights are "
                   f"taken at {used.file}:{used.line} (`{used.segment}`)")
        hint = ("Hide the later keys before the softmax: scores.masked_fill(mask == 0, "
                "float('-inf')), not scores * mask.")
        return diagnostic("causal-leak", message, hint, **applied.place(), **data)
    if inverted.built is not None:
        at = where(probe, inverted.built)
        what = (f"the causal mask built here (`{at.segment}`) is inverted: applied by "
                f"`{applied.segment}` at {applied.file}:{applied.line}, it")
    else:
        at = applied
        what = f"the causal mask is inverted: `{applied.segment}`"
    message = (f"{what} hides each query's earlier keys {own}and keeps the later ones, so output "
               f"position {row} depends on input position {col} of {_sources_text(dep, 'time')}, "
               f"a later one ({len(leaks)} of the {probe.T * (probe.T - 1) // 2} future pairs over "
               f"T leak); the weights are taken at {used.file}:{used.line} (`{used.segment}`)")
    hint = ("Hide the keys after each query (j > i) instead: masked_fill's mask is "
            "torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), or tril(...) == 0 on a "
            "0/1 tril buffer.")
    return diagnostic("causal-leak", message, hint, **at.place(), **data)


def batch_mixing(probe: Probe, dep: DependencyResult, leaks, rec: OpRecord | None) -> Diagnostic:
    at = where(probe, rec)
    grid = dep.batch_grid
    B = grid.shape[0]
    row, col = min(leaks)
    message = (f"samples in the batch (B) are mixed: the output of sample {row} depends on sample {col} "
               f"of {_sources_text(dep, 'batch')} ({len(leaks)} of {B * (B - 1)} cross-sample pairs)")
    message += f"; the first op that mixes samples is {at.text}" if at.text else \
        "; no single op could be named"
    data = {"kind": "mixing", "grid": _grid(grid, "diagonal", "B", "sample"), "leaks": len(leaks)}
    data["grid_text"] = grid_text(data)
    return diagnostic("batch-leak", message, _batch_hint(probe, rec), **at.place(),
                      made_at=_module_built(rec) or _sequence_first_built(probe, rec), **data)


def batch_position(probe: Probe, dep: DependencyResult, change: float,
                   rec: OpRecord | None) -> Diagnostic:
    at = where(probe, rec)
    grid = dep.batch_grid
    message = (f"a sample's output depends on its position in the batch (B): moving every sample one "
               f"place along the batch changed the outputs by up to {change:.3g} (relative)")
    message += f"; the first op that depends on the batch position is {at.text}" if at.text else ""
    if rec is not None and base_name(rec.op) in POSITION_OPS:
        hint = ("Positions must come from the time axis: for a (B, T, C) input x.shape[0] / x.size(0) "
                "is B. Use torch.arange(x.shape[1]) (T) to index position tables, and slice them "
                "with [:T].")
    else:
        hint = ("A sample's output must not depend on where it sits in the batch: look for sizes or "
                "indices taken from the batch axis (x.shape[0] is B for a (B, T, C) input).")
    data: dict[str, Any] = {"kind": "position", "max_change": change, "leaks": 0}
    if grid is not None:
        data["grid"] = _grid(grid, "diagonal", "B", "sample")
    return diagnostic("batch-leak", message, hint, **at.place(), **data)


def nondeterministic(probe: Probe, change: float, rec: OpRecord | None) -> Diagnostic:
    at = where(probe, rec)
    message = (f"two runs in eval mode with the same inputs gave different outputs "
               f"(largest difference {change:.3g})")
    message += f"; the first op that differs is {at.text}" if at.text else ""
    noise = _noise_per_sample(probe, rec)
    drawn = not noise and rec is not None and rec.op in _INDEX_DRAWS
    asked = not noise and not drawn and _asks_training(rec)
    if drawn:
        message += (", positions or keys drawn at random: a sampler's by design (ProbSparse "
                    "attention picking keys to score, random masking), a bug where it is meant for "
                    "training only")
        hint = ("Sampling meant for training only is drawn only when self.training; a sampler "
                "meant for inference too can take a generator seeded per call to be repeatable.")
    elif noise:
        message += ", Gaussian noise drawn for every sample: random in eval by design in a sampler " \
                   "or a noise injection, a bug where it is meant for training only"
        hint = ("Noise meant for training only (noisy gating, augmentation) is drawn only when "
                "self.training: `if self.training: x = x + torch.randn_like(x) * s`.")
    elif asked:
        message += (", a dropout whose call passes training=True itself: random in eval by design "
                    "where the model keeps its dropout at inference (Tacotron's prenet, Monte Carlo "
                    "dropout), a bug where it is meant for training only")
        hint = "Dropout meant for training only takes training=self.training (or is an nn.Dropout)."
    elif rec is not None and rec.op in DROPOUTS:
        hint = ("F.dropout defaults to training=True whatever the module's mode: pass "
                "training=self.training, or use an nn.Dropout module, which follows model.eval().")
    else:
        hint = ("In eval mode the output must be a function of the inputs: gate random ops on "
                "self.training (F.dropout(x, p, training=self.training), or nn.Dropout).")
    return diagnostic("nondeterministic-eval", message, hint, **at.place(), max_change=change,
                      made_at=_random_argument(rec),
                      variant="noise" if noise or drawn else "asked" if asked else None)


#: draws of indices: which positions or keys a sampler picks
_INDEX_DRAWS = frozenset({"torch.randint", "torch.randint_like", "torch.randperm", "torch.multinomial"})


def _asks_training(rec: OpRecord | None) -> bool:
    """Whether ``rec`` is a dropout whose call on the user's line writes ``training=True``
    (by keyword or third): the code asks for dropout in eval; unlike ``F.dropout(x, p)``,
    random by torch's default (the recorded call holds the default too: the source says which),
    or a layer's own dropout left in training mode (library code's call)."""
    if rec is None or rec.op not in DROPOUTS or rec.internal:
        return False
    try:
        call = ast.parse(rec.source.strip(), mode="eval").body
    except SyntaxError:
        return False
    if not isinstance(call, ast.Call):
        return False
    given = next((k.value for k in call.keywords if k.arg == "training"),
                 call.args[2] if len(call.args) > 2 else None)
    return isinstance(given, ast.Constant) and given.value is True


def _noise_per_sample(probe: Probe, rec: OpRecord | None) -> bool:
    """Whether ``rec`` draws Gaussian noise with an axis of the batch: a value per sample that a
    sampler, a reparameterisation or a noise injection adds on purpose, and noisy gating only
    while training; unlike a drop mask (uniform draws against a rate) or weights drawn in
    forward (no batch axis), nothing says which. A warning, never an error."""
    if rec is None or rec.op not in GAUSSIAN_DRAWS or not rec.outputs:
        return False
    return any(probe.dims.label(size) == "B" for size in rec.outputs[0].shape)


#: the arguments of an op that make it random
_RANDOM_ARGUMENTS = ("dropout_p", "p", "training", "dropout")


def _random_argument(rec: OpRecord | None) -> tuple[str, int] | None:
    """``(file, line)`` of the argument that made ``rec`` random (``dropout_p=self.p`` of an
    SDPA call written over several lines), where it is on another line than the call."""
    from ..base.source import display_path
    from ..rules.statements import expression_at

    if rec is None or rec.line is None:
        return None
    filename, line, col, end_col = rec.where
    node = expression_at(filename, line, col, end_col) if filename else None
    for keyword in getattr(node, "keywords", None) or ():
        if keyword.arg in _RANDOM_ARGUMENTS and keyword.value.lineno != rec.line:
            return display_path(filename), keyword.value.lineno
    return None


# ---------------------------------------------------------------------------------------------
# Hints
# ---------------------------------------------------------------------------------------------


def _mha(probe: Probe, rec: OpRecord | None) -> nn.MultiheadAttention | None:
    """The ``nn.MultiheadAttention`` that ran the op, if one did."""
    if rec is None:
        return None
    prefix = probe.root + "."
    if not rec.module.startswith(prefix):
        return None
    sub = probe.model.get_submodule(rec.module[len(prefix):])
    return sub if isinstance(sub, nn.MultiheadAttention) else None


def _batch_hint(probe: Probe, rec: OpRecord | None) -> str:
    mha = _mha(probe, rec)
    if mha is not None and not mha.batch_first:
        return ("nn.MultiheadAttention expects (T, B, C) unless batch_first=True: it attended across "
                "the batch. Construct it with batch_first=True, or transpose the input to (T, B, C) "
                "and the output back.")
    if rec is not None and rec.op in ("Tensor.repeat", "torch.tile", "Tensor.tile"):
        segment = rec.source
        fixed = _interleaved(segment)
        shown = f": `{fixed}`" if fixed else ""
        return (f"`{segment or rec.op}` lays its copies out copy-major (row i gets sample i mod B), "
                f"but rows made by merging (B, H) into B*H are sample-major: repeat each sample "
                f"in place with repeat_interleave{shown}.")
    if "B" in _axis_names(rec, probe.dims):
        return (f"{rec.op} runs over the batch axis (B), so samples see each other: reduce over the "
                f"keys or features (dim=-1) instead.")
    return ("Every op must treat the samples independently: check the axis order ((B, T, C) vs "
            "(T, B, C)) and that no reduction, softmax or norm runs over the batch axis.")


def _interleaved(segment: str) -> str:
    """``valid_lens.repeat(self.num_heads)`` rewritten as
    ``valid_lens.repeat_interleave(self.num_heads, dim=0)``; "" when the call is not that simple."""
    head, sep, rest = segment.partition(".repeat(")
    if not sep or not rest.endswith(")") or "," in rest or "(" in head:
        return ""
    return f"{head}.repeat_interleave({rest[:-1]}, dim=0)"


def _operand(rec: OpRecord, position: int, name: str):
    """The recorded argument: the operand's metadata for a tensor, else the value."""
    value = rec.arg(position, name)
    return rec.inputs[value.index] if isinstance(value, TensorArg) else value


def _causal_hint(probe: Probe, rec: OpRecord | None, records: Sequence[OpRecord]) -> str:
    op = rec.op if rec is not None else ""
    if op == SDPA:
        mask = _operand(rec, 3, "attn_mask")
        if mask is not None and getattr(mask, "dtype", None) == torch.bool:
            return ("A boolean attn_mask in F.scaled_dot_product_attention is True where a query MAY "
                    "attend (the opposite of masked_fill's mask): use torch.tril(torch.ones(T, T, "
                    "dtype=torch.bool)), or drop the mask and pass is_causal=True.")
        if mask is not None and hasattr(mask, "shape"):
            return ("A float attn_mask is added to the scores: it must be 0 where a query may attend "
                    "and -inf at later keys. Or drop it and pass is_causal=True.")
        return "Pass is_causal=True (or a causal attn_mask) to F.scaled_dot_product_attention."
    if _mha(probe, rec) is not None:
        return ("Pass a causal attn_mask to nn.MultiheadAttention: torch.triu(torch.ones(T, T, "
                "dtype=torch.bool), diagonal=1) (True = blocked), or nn.Transformer.generate_square_"
                "subsequent_mask(T).")
    softmax = op in SOFTMAXES or op in LOG_SOFTMAXES
    if "T" in _axis_names(rec, probe.dims) and not softmax:
        return (f"{op} runs over the time axis (T), so every position sees the whole sequence, "
                f"future included: normalise or reduce over the features (dim=-1, as nn.LayerNorm "
                f"does) instead.")
    note = _mask_note(probe, rec, records)
    if softmax and not note:
        applied = _applied_mask(probe, rec, records)
        if applied is not None:
            at = where(probe, applied)
            return (f"The scores are masked at {at.file}:{at.line} (`{at.segment}`), but later "
                    f"positions still get weight there: the mask must hide the keys after each "
                    f"query (j > i), e.g. torch.triu(torch.ones(T, T, dtype=torch.bool), "
                    f"diagonal=1) as masked_fill's mask, or tril(...) == 0 on a 0/1 tril buffer.")
    if softmax:
        return ("The scores reach the softmax without a causal mask: fill later positions with "
                "float('-inf') first, scores = scores.masked_fill(future, float('-inf'))." + note)
    if op in MATMULS:
        return ("The attention weights give non-zero weight to later positions: fill the masked scores "
                "with float('-inf') or torch.finfo(scores.dtype).min before the softmax." + note)
    return "A causal model's output at position t must depend on inputs 0..t only." + note


def _causal_cause(probe: Probe, rec: OpRecord | None,
                  records: Sequence[OpRecord]) -> tuple[str | None, int] | None:
    """The line that made the value through which the future leaks, when it is not the op
    that first sees the future: the mask handed to scaled_dot_product_attention or
    (the op that made it), a masked_fill whose result was dropped or
    whose fill value is too small, a mask applied with the wrong triangle, the construction of
    a softmax module that normalises over time. None when the op itself is the cause."""
    if rec is None:
        return None
    if rec.op == SDPA:
        return _made_at(probe, records, _operand(rec, 3, "attn_mask"))
    if _mha(probe, rec) is not None:  # the mask handed to nn.MultiheadAttention, if any
        return _made_at(probe, records, _operand(rec, _MHA_MASK_AT, "attn_mask")) \
            if rec.op == MHA_FORWARD else None
    softmax = rec.op in SOFTMAXES or rec.op in LOG_SOFTMAXES
    if "T" in _axis_names(rec, probe.dims) and not softmax:
        return None
    ineffective = _ineffective_mask(probe, rec, records)  # the mask the hint names
    if ineffective is not None:
        return _place(probe, ineffective[0])
    if softmax:
        applied = _applied_mask(probe, rec, records)
        if applied is not None:
            return _place(probe, applied)
        return _module_built(rec)
    return None


def _masks_before(probe: Probe, rec: OpRecord | None, records: Sequence[OpRecord]):
    """The masked_fill / where ops on (.., T, T) scores before ``rec`` (all, when None), in order."""
    for earlier in records:
        if rec is not None and earlier.index == rec.index:
            return
        if (earlier.op in MASKED_FILLS or earlier.op in WHERES) and earlier.outputs \
                and sum(size == probe.T for size in earlier.outputs[0].shape) >= 2:
            yield earlier


#: where ``F.multi_head_attention_forward`` takes its ``attn_mask`` (nn.MultiheadAttention
#: hands it by name)
_MHA_MASK_AT = 16


def _made_at(probe: Probe, records: Sequence[OpRecord], meta) -> tuple[str | None, int] | None:
    """Where the op that made the tensor ``meta`` was written, when the trace recorded it on a
    line of the user's code."""
    src = getattr(meta, "src", None)
    for _ in range(8):  # past the library's own conversions (a bool mask made float inside MHA)
        if src is None or not 0 <= src[0] < len(records):
            return None
        made = records[src[0]]
        if not made.internal or not made.inputs:
            return _place(probe, made)
        src = made.inputs[0].src
    return None


def _place(probe: Probe, rec: OpRecord) -> tuple[str | None, int] | None:
    at = where(probe, rec)
    return (at.file, at.line) if at.line is not None else None


def _module_built(rec: OpRecord | None) -> tuple[str | None, int] | None:
    """The line that built the softmax module ``rec`` ran in (``self.softmax = nn.Softmax(dim=0)``,
    called as ``self.softmax(x)``): its constructor chose the axis the op normalised."""
    if rec is None or not rec.internal or not (rec.op in SOFTMAXES or rec.op in LOG_SOFTMAXES):
        return None
    return _built_line(rec)


def _built_line(rec: OpRecord) -> tuple[str | None, int] | None:
    """The line that built the module ``rec`` ran in, when it is another than the call's."""
    built = constructor_of(rec)
    return (rec.file, built.lineno) if built is not None and built.lineno != rec.line else None


def _sequence_first_built(probe: Probe, rec: OpRecord | None) -> tuple[str | None, int] | None:
    """The line that built the nn.MultiheadAttention ``rec`` ran in without batch_first (``self.attn
    = nn.MultiheadAttention(d, h)``, or the torch layer around it the user's class built:
    ``nn.TransformerEncoderLayer(d, h)``): its constructor chose the (T, B, C) layout that mixed
    the samples."""
    mha = _mha(probe, rec)
    if mha is None or mha.batch_first:
        return None
    line = built_line(rec)
    return (rec.file, line) if line is not None and line != rec.line else None


def _applied_mask(probe: Probe, rec: OpRecord | None, records: Sequence[OpRecord]):
    """The last masked_fill / where on (.., T, T) scores before ``rec`` whose result is used:
    a mask that is there but lets the future through (triu for tril, ``== 1`` for ``== 0``)."""
    found = None
    for earlier in _masks_before(probe, rec, records):
        if earlier.op.endswith("_") or earlier.outputs[0].used:
            found = earlier
    return found


def _mask_note(probe: Probe, rec: OpRecord | None, records: Sequence[OpRecord]) -> str:
    """Points at a masked_fill whose result was dropped, or whose fill value is too small."""
    found = _ineffective_mask(probe, rec, records)
    if found is None:
        return ""
    earlier, value = found
    at = where(probe, earlier)
    if value is None:
        return (f" The result of `{at.segment}` at {at.file}:{at.line} is never "
                f"used: assign it (scores = scores.masked_fill(...)) or use masked_fill_.")
    return (f" `{at.segment}` at {at.file}:{at.line} fills with {value!r}, "
            f"which hardly changes the scores: use float('-inf').")


def _ineffective_mask(probe: Probe, rec: OpRecord | None, records: Sequence[OpRecord]):
    """``(op, None)`` for the first mask on (.., T, T) scores before ``rec`` whose result was
    dropped (an out-of-place masked_fill never assigned), ``(op, value)`` for one whose fill
    value is too small to hide anything; None when there is neither."""
    for earlier in _masks_before(probe, rec, records):
        if earlier.op in MASKED_FILLS and not earlier.op.endswith("_") and not earlier.outputs[0].used:
            return earlier, None
        value = earlier.arg(2, "value")
        if isinstance(value, (int, float)) and abs(value) < 1e3:
            return earlier, value
    return None
