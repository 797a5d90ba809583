"""norm-bypassed: self-attention whose queries are projected from the normalised stream and whose
keys or values from the stream before the norm (or the other way round).

In a pre-norm block, the queries, keys and values of self-attention are projections of one
tensor: ``h = norm(x)``, then ``q = W_q h``, ``k = W_k h``, ``v = W_v h``. Taking the keys and
values from ``x`` itself (``context = default(context, x)`` written before ``x = self.norm(x)``)
lets the un-normalised residual stream, whose scale grows with depth, into the keys and values
while the queries see its normalised form.

Read from the trace: for each attention, its queries, keys and values are walked back through
moves (views, transposes, picks of a fused projection, casts, a factor of one number) to the
linear projection that made each, and that projection's input. Where one input is the output
of a normalisation (``F.layer_norm``, ``F.rms_norm``, ``F.group_norm``, or the user's own: the
tensor times or over a chain from a statistic of itself along the features, then a learned
gain or bias) whose input is the very tensor the other projection reads, the other projection
bypassed the norm, when both are in one function (a forward that takes the queries, keys and
values from one tensor: a block that normalises its ``query`` argument and hands its ``key`` on
to an attention layer takes two inputs, whatever its caller passes). Inputs that are different
tensors (cross-attention's context, positions added to the queries and keys only) are not judged.

The finding is at the projection that reads the stream before the norm; where the name it
reads was bound on a line of its own by an assignment that computes nothing (an alias,
``context = default(context, x)``), at that line, the projection's line kept as where it is used.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..base.ops import CASTS, DIVS, MULS, PERMUTES, PICKS, RESHAPES, base_name
from .norms import scaled_from, statistics_applied
from .registry import diagnostic
from .statements import expression_at, statement_at

if TYPE_CHECKING:
    from ..analysis.facts import Analysis
    from ..base.records import OpRecord, TensorMeta

_PROJECTIONS = {"F.linear": 0, "torch.addmm": 1, "Tensor.addmm": 1}
_MOVES = RESHAPES | PERMUTES | CASTS | frozenset({"Tensor.contiguous"})
_NORMS = frozenset({"F.layer_norm", "torch.layer_norm", "F.rms_norm", "F.group_norm"})
_DEPTH = 8


def check_bypassed(analysis: Analysis):
    graph = analysis.graph
    seen: set[int] = set()
    for att in analysis.attentions:
        if att.scores is None or not att.uses:
            continue
        product = att.scores.rec
        if len(product.inputs) != 2:
            continue
        sides = [("queries", product.inputs[0]), ("keys", product.inputs[1])]
        use = att.uses[0]
        values = [m for s, m in enumerate(use.matmul.inputs) if s != use.slot]
        if len(values) == 1:
            sides.append(("values", values[0]))
        projected = [(name, _projection(graph, meta)) for name, meta in sides]
        projected = [(name, found) for name, found in projected if found is not None]
        for other, (other_rec, other_source) in projected:
            bypassing = [(name, rec, norm) for name, (rec, source) in projected
                         if source is not other_source and rec.index not in seen
                         and (norm := _normalised(graph, other_source, source)) is not None
                         and _same_function(rec, other_source, norm)]
            if not bypassing:
                continue
            seen.update(rec.index for _, rec, _ in bypassing)
            yield _finding(analysis, bypassing, other, other_rec)
            break


def _same_function(rec: OpRecord, normed: TensorMeta, norm: OpRecord) -> bool:
    """Whether the projection ``rec`` is called in the function that normalised the stream (the
    line that called the norm, or the norm's own line): one forward that takes both from one
    tensor. A block that normalises its ``query`` argument and hands its ``key`` on untouched to
    an attention layer takes them as two inputs, whatever tensor its caller passes for both."""
    made = normed.returned.site if normed.returned is not None and normed.returned.site \
        else norm.site
    return rec.site is not None and made is not None and rec.site[0] is made[0]


def _projection(graph, meta: TensorMeta) -> tuple[OpRecord, TensorMeta] | None:
    """``(the linear projection that made meta, its input)`` through moves, or None."""
    for _ in range(_DEPTH):
        rec = graph.producer(meta)
        if rec is None or rec.error is not None or not rec.inputs:
            return None
        if rec.op in _PROJECTIONS and len(rec.inputs) > _PROJECTIONS[rec.op]:
            return rec, rec.inputs[_PROJECTIONS[rec.op]]
        if rec.op in _MOVES or base_name(rec.op) in PICKS \
                or (rec.op in MULS | DIVS and len(rec.inputs) == 1):
            meta = rec.inputs[0]
            continue
        return None
    return None


def _normalised(graph, meta: TensorMeta, source: TensorMeta) -> OpRecord | None:
    """The op that normalised ``source`` on the way to ``meta``, when ``meta`` is a norm of
    ``source`` (then at most a learned gain and bias, or a cast); None otherwise."""
    for _ in range(3):  # the norm's output, times a gain, plus a bias
        rec = graph.producer(meta)
        if rec is None or rec.error is not None or not rec.inputs:
            return None
        if rec.op in _NORMS:
            return rec if rec.inputs[0] is source else None
        if rec.op in MULS | DIVS and len(rec.inputs) == 2 and any(
                x is source and abs(power + 1.0) < 1e-9 and scaled_from(graph, kept, source)
                for kept, _, x, power in statistics_applied(graph, rec)):
            return rec  # the tensor over a statistic of itself (``rules.norms``)
        if rec.op not in MULS | DIVS | CASTS and base_name(rec.op) not in ("add", "sub"):
            return None
        inner = [m for m in rec.inputs if graph.producer(m) is not None]
        if len(inner) != 1:
            return None
        meta = inner[0]
    return None


def _finding(analysis: Analysis, bypassing: list, other: str, other_rec: OpRecord):
    _, rec, norm = bypassing[0]
    name = " and ".join(dict.fromkeys(n for n, _, _ in bypassing))
    places = ", ".join(dict.fromkeys(f"`{r.source or r.op}` at {r.file}:{r.line}"
                                     for _, r, _ in bypassing))
    alias = _alias_line(analysis, rec)
    message = (f"the {name} are projected from the stream before its norm ({places}), the "
               f"{other} from the normalised stream (`{other_rec.source or other_rec.op}` at "
               f"{other_rec.file}:{other_rec.line}, after `{norm.source or norm.op}` at "
               f"{norm.file}:{norm.line}): in self-attention they are projections of one "
               f"tensor, and the {name} see the un-normalised residual stream")
    if alias is not None:
        message += f"; the value the {name} read was chosen at {rec.file}:{alias}"
    hint = ("Normalise first, then take the queries, keys and values from the normalised "
            "tensor: x = self.norm(x); context = x if context is None else context")
    return diagnostic("norm-bypassed", message, hint, rec=rec,
                      made_at=(rec.file, alias) if alias is not None else None)


def _alias_line(analysis: Analysis, rec: OpRecord) -> int | None:
    """The line of the assignment that bound the one name the projection's call reads, when it
    is in the same function, before it, and only chose a value (a name, a conditional of names,
    a plain function of names: ``context = default(context, x)``). An assignment that computes
    (a layer, arithmetic, a method) ends the search where the trace saw it run, and is passed
    over where it did not (a branch not taken)."""
    filename, line, col, end_col = rec.where
    call = expression_at(filename, line, col, end_col)
    if not isinstance(call, ast.Call) or len(call.args) != 1 or not isinstance(call.args[0], ast.Name):
        return None
    name = call.args[0].id
    found = statement_at(filename, line)
    if found is None:
        return None
    bound = sorted((node for node in ast.walk(found[0])
                    if isinstance(node, ast.Assign) and node.lineno < line
                    and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)),
                   key=lambda node: node.lineno, reverse=True)
    ran = {r.line for r in analysis.records if r.file == rec.file}
    for node in bound:
        if _chooses(node.value):
            return None if node.lineno in ran else node.lineno
        if node.lineno in ran:
            return None
    return None


def _chooses(value: ast.expr) -> bool:
    """Whether an expression only picks one of some names (no tensor computed in it)."""
    if isinstance(value, (ast.Name, ast.Constant)):
        return True
    if isinstance(value, ast.IfExp):
        return _chooses(value.body) and _chooses(value.orelse) and _plain(value.test)
    if isinstance(value, ast.BoolOp):
        return all(_chooses(v) for v in value.values)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.keywords:
        return all(isinstance(a, (ast.Name, ast.Constant)) for a in value.args)
    return False


def _plain(test: ast.expr) -> bool:
    """A test that computes nothing: names, None, comparisons, a plain function's call."""
    return not any(isinstance(n, (ast.Attribute, ast.Subscript, ast.BinOp))
                   or (isinstance(n, ast.Call) and not isinstance(n.func, ast.Name))
                   for n in ast.walk(test))
