"""attention-scale: the factor that scales attention scores, judged against the head size.

The factors applied to the scores, to q or to k before their product (a division, a
multiplication, SDPA's ``scale=``) are gathered along the dataflow graph and explained in named
sizes: 1/sqrt(d) is right; sqrt(C), sqrt(H), twice, or none at all are findings. The scale the
user's code wrote is rewritten in the fix (``scale_fixes``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..analysis.facts import Analysis
from ..analysis.graph import (
    DEPTH,
    carries,
    contracted_size,
    forward_position,
)
from ..base.ops import (
    ADDS,
    DIVS,
    MATMULS,
    MOVES,
    PLAIN_MATMULS,
    MULS,
    PICKS,
    REVERSALS,
    SDPA,
    base_name,
    matmul_operands,
)
from ..base.records import TensorArg
from .fixes import with_fix
from .norms import scaled_from, statistics_applied
from .registry import diagnostic
from .scale_cause import scale_origin
from .scale_fixes import add_factor, drop_keyword, head_size_text, replace_factor

#: Ops followed back from q and k to find a scale applied to them: the moves, less indexing,
#: full reversals and a few casts and aliases that this walk does not follow.
_TO_SCALE = MOVES - REVERSALS - {"[]", "Tensor.half", "Tensor.bfloat16", "Tensor.double",
                                 "Tensor.detach", "Tensor.transpose_", "Tensor.moveaxis",
                                 "torch.broadcast_to", "Tensor.broadcast_to"}


# --- attention-scale --------------------------------------------------------------------------

def scalar_argument(rec, slot: int) -> float | None:
    """The number a mul/div record scales its ``slot`` operand by, or None."""
    op = rec.op
    if (op not in MULS and op not in DIVS) or len(rec.inputs) > 2:
        return None
    other = None  # (argument position, value)
    for position, a in enumerate(rec.args[:2]):
        if isinstance(a, TensorArg):
            if a.index == slot:
                continue
            m = rec.inputs[a.index]
            if m.value is None or math.prod(m.shape) != 1:
                return None
            other = (position, float(m.value))
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            other = (position, float(a))
    if isinstance(rec.kwargs.get("other"), (int, float)):
        other = (1, float(rec.kwargs["other"]))
    if other is None or other[1] == 0:
        return None
    if op in DIVS:
        if other[0] != 1 or rec.kwargs.get("rounding_mode"):
            return None  # 1 / x, or an integer division: not a scale
        return 1.0 / other[1]
    return other[1]



@dataclass
class Factor:
    value: float
    rec: object
    where: str  # "scores", "q", "k", "sdpa"
    implicit: bool = False  # scaled_dot_product_attention's default scale



def _operand_factors(graph, meta, where: str, depth: int = 0) -> list[Factor]:
    """Scalars applied to q or k on their way to the product: ``q = q * self.scale``."""
    rec = graph.producer(meta)
    if rec is None or depth > DEPTH or rec.error is not None or not rec.inputs:
        return []
    slot = 0
    value = scalar_argument(rec, 0)
    if value is None and len(rec.inputs) == 2:
        value = scalar_argument(rec, 1)
        slot = 1 if value is not None else 0
    if value is not None:
        if _mean_of_product(graph, rec.inputs[slot], value):
            return []  # ``bmm(a, b).div_(rank)``: the product's mean over what it summed
        return [Factor(value, rec, where)] + _operand_factors(graph, rec.inputs[slot], where, depth + 1)
    if rec.op in _TO_SCALE and meta.src[1] == 0:
        return _operand_factors(graph, rec.inputs[0], where, depth + 1)
    return []



def _mean_of_product(graph, meta, value: float) -> bool:
    """Whether ``value`` times ``meta`` is a mean: ``meta`` made by a product of two operands
    (``torch.bmm(A, B)``, ``A @ B``) and ``value`` one over the size of the axis it summed (a
    factored projection averaged over its rank, ``bmm(A_q, B_q).div_(q_rank)``). Part of
    making q or k, not a scale of the scores."""
    made = graph.producer(meta)
    if made is None or made.op not in PLAIN_MATMULS or len(made.inputs) < 2 or value <= 0:
        return False
    summed = made.inputs[0].shape[-1] if made.inputs[0].shape else None
    return bool(summed) and summed > 1 and abs(value * summed - 1.0) < 1e-9


def _dim_names(dims, d: int, d_name: str, width: int | None = None) -> list[tuple[str, int]]:
    """Named sizes to explain a factor by, the contracted size first. ``width``: the size of
    the features q and k were both projected from, the model width by what the code does with
    it; a number where no name holds it (a script's ``C = 32`` at the user's sizes, where no C
    is named; a latent width the code chose, kept beside probe sizes that name the inputs)."""
    out, seen = [(d_name, d)], {d}
    if width and width > 1 and width != d and (
            dims.get("C") is None if getattr(dims, "strict", False) else width not in dims.values()):
        out.append((str(width), width))  # a number: no name is proven at these sizes
        seen.add(width)
    # at the user's own sizes only the sizes a scale is made of explain it: a batch or a length
    # that happens to equal the factor's size (B = H = 2) is chance, not the code's choice
    names = ("C", "H") if getattr(dims, "strict", False) else ("C", "H", "T", "S", "B", "V", "L", *dims)
    for name in names:
        size = dims.get(name)
        if size and size > 1 and size not in seen:
            seen.add(size)
            out.append((name, size))
    return out



def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=2e-3)



_AMBIGUOUS = "ambiguous"



def explain_scale(value: float, dims, d: int, d_name: str, width: int | None = None) -> str | None:
    """The scale in named sizes (``1/sqrt(C)``); ``_AMBIGUOUS`` when two names explain it
    (at H = d, 1/d is 1/sqrt(C)), or when 1/d could be 1/sqrt of a width no name holds."""
    found = []
    shared = False  # a size two names hold (B = H = 2): either name could be the wrong one
    sizes = list(dims.values())
    for name, n in _dim_names(dims, d, d_name, width):
        for text, expect in ((f"1/sqrt({name})", n ** -0.5), (f"1/{name}", 1 / n),
                             (f"sqrt({name})", n ** 0.5), (name, float(n)),
                             (f"{name}**-0.25", n ** -0.25)):
            if _close(value, expect):
                found.append(text)
                shared = shared or sizes.count(n) > 1 or dims.shared(n)
                break
    if len(found) > 1 or shared or (found == [f"1/{d_name}"] and getattr(dims, "strict", False)
                                    and dims.get("C") is None):
        return _AMBIGUOUS
    if not found and d > 2 and sizes.count(d) <= 1:  # ``d**1/2`` is ``(d**1)/2`` in Python
        for text, expect in _SLIPS:
            if _close(value, expect(d)):
                return text.format(d_name)
    return found[0] if found else None


#: a scale the head size's root written without parentheses makes, as ``explain_scale`` names it
_SLIPS = (("1/({}/2)", lambda d: 2 / d), ("1/(2*{})", lambda d: 1 / (2 * d)),
          ("{}/2", lambda d: d / 2), ("2*{}", lambda d: 2.0 * d))
#: the hint for such a scale
PRECEDENCE = ("`d**1/2` is `(d**1)/2` in Python (and `d**-1/2` is `(d**-1)/2`): ** binds "
              "tighter than /. Write d**0.5 (or math.sqrt(d)), or d**-0.5.")


def precedence_slip(explained: str | None, d_name: str) -> bool:
    """Whether ``explained`` (``explain_scale``'s) names a root written without parentheses."""
    return explained in {text.format(d_name) for text, _ in _SLIPS}



def _judge(analysis: Analysis, factors: list[Factor], d: int, anchor, width: int | None = None):
    """A diagnostic for the factors applied to one attention's scores, or None when right."""
    dims = analysis.dims
    right = d ** -0.5
    total = math.prod(f.value for f in factors)
    if _close(total, right):
        return None
    name = "d" if dims.get("d") == d else dims.label(d)
    size = f"head size {name} = {d}" if name == "d" else (
        f"q·k sums over {d} numbers" if name == str(d) else f"q·k sums over {name} = {d}")
    if _close(total, 1.0):
        if any(not _close(f.value, 1.0) for f in factors):
            return None  # factors that cancel: leave it to the reader
        message = (f"attention scores are not scaled: softmax(q·k) without the 1/sqrt({name}) "
                   f"factor ({size})")
        hint = ("Multiply the scores by 1/math.sqrt(head_size) before the softmax (fine to ignore "
                "if the scale is folded into the weights, as in T5).")
        fix = None
        if not factors:
            size_text = head_size_text(analysis.records, anchor, d)
            fix = add_factor(anchor, size_text) if size_text else None
        elif len(factors) == 1 and factors[0].where == "sdpa" and not factors[0].implicit:
            fix = drop_keyword(factors[0].rec, "scale")  # the default scale is 1/sqrt(head size)
        return diagnostic("attention-scale", message, with_fix(hint, fix), rec=anchor,
                          variant="unscaled", factor=total, expected=right,
                          fix=fix.data() if fix else None)
    ones = [f for f in factors if _close(f.value, right)]
    if len(ones) >= 2:
        second = max(ones, key=lambda f: f.rec.index)
        first = min(ones, key=lambda f: f.rec.index)
        message = (f"attention scores scaled twice by 1/sqrt({name}): {_describe(first)} and again "
                   f"{_describe(second)}, so they are divided by {name} in all")
        origin = scale_origin(second.rec)
        if origin is not None:
            message += f"; the second is chosen at {origin[0]}:{origin[1]}: `{origin[2]}`"
        hint = "Scale once: drop one of the two factors."
        fix = replace_factor(second.rec, None)
        return diagnostic("attention-scale", message, with_fix(hint, fix), rec=second.rec,
                          factor=total, expected=right, fix=fix.data() if fix else None)
    explained = explain_scale(total, dims, d, name, width)
    if explained is None:
        return None  # a learned temperature or a scale we cannot name: say nothing
    culprit = max((f for f in factors if not _close(f.value, 1.0)), key=lambda f: f.rec.index,
                  default=None)
    target = culprit.rec if culprit is not None else anchor
    message = (f"attention scores scaled by {explained} instead of 1/sqrt({name}) "
               f"(factor {total:.4g}, {size})")
    if explained == _AMBIGUOUS:  # say what is sure: the factor, not which size it came from
        message = (f"attention scores scaled by {total:.4g} instead of 1/sqrt({name}) = "
                   f"{right:.4g} ({size})")
        hint = ("Divide the scores by math.sqrt(head_size), the size of the axis q·k sums "
                "over.")
    elif precedence_slip(explained, name):
        hint = PRECEDENCE
    elif explained.endswith("**-0.25"):
        hint = ("A factor of head_size ** -0.25 belongs on q and on k, each: their product is "
                "then divided by sqrt(head_size). Applied once, it scales the scores by the "
                "square root of that: apply it to both, or scale the scores by head_size ** -0.5.")
    elif explained.startswith("1/sqrt("):
        hint = "Divide by math.sqrt(head_size), the size of the axis q·k sums over, not by sqrt of the model width or of the head count."
    elif explained.startswith("1/"):
        hint = "Divide by math.sqrt(head_size), not by head_size itself."
    else:
        hint = "Divide the scores by math.sqrt(head_size) (multiply by head_size ** -0.5)."
    fix = None
    if culprit is not None and len(factors) == 1:
        if culprit.where != "sdpa":
            size_text = head_size_text(analysis.records, anchor, d)
            fix = replace_factor(culprit.rec, size_text) if size_text else None
        elif not culprit.implicit and anchor.inputs[0].shape[-1] == d:
            fix = drop_keyword(culprit.rec, "scale")  # the default scale is 1/sqrt(head size)
        if fix is not None and culprit.where == "sdpa":
            hint = "Leave out scale=: scaled_dot_product_attention divides by sqrt(q.size(-1))."

    origin = scale_origin(culprit.rec) if culprit is not None else None
    if origin is not None and _close(1.0 / culprit.value, right):
        origin = None  # the number is right, the op applies it the wrong way round (/ for *)
    if origin is not None:
        message += f"; the factor is chosen at {origin[0]}:{origin[1]}: `{origin[2]}`"
    return diagnostic("attention-scale", message, with_fix(hint, fix), rec=target, factor=total,
                      expected=right, fix=fix.data() if fix else None,
                      origin=f"{origin[0]}:{origin[1]}" if origin else None,
                      made_at=origin[:2] if origin is not None else None)



def _describe(f: Factor) -> str:
    if f.where == "sdpa":
        where = ("by scaled_dot_product_attention's default scale" if f.implicit
                 else "by scaled_dot_product_attention's scale=")
    else:
        where = {"scores": "on the scores", "q": "on q", "k": "on k"}[f.where]
    line = f" (line {f.rec.line})" if f.rec.line else ""
    return f"{where}{line}"



def _sdpa_scale(rec) -> tuple[float, bool] | None:
    scale = rec.arg(6, "scale")
    if scale is None:
        if not rec.inputs or not rec.inputs[0].shape:
            return None
        return rec.inputs[0].shape[-1] ** -0.5, True
    try:
        return float(scale), False
    except (TypeError, ValueError):
        return None



def check_scale(analysis: Analysis):
    graph = analysis.graph
    seen = set()
    for att in analysis.attentions:
        scores = att.scores
        if scores is None or scores.rec.index in seen:
            continue
        seen.add(scores.rec.index)
        product = scores.rec
        d = contracted_size(product)
        pair = matmul_operands(product) if product.op != "torch.einsum" else (0, 1)
        if not d or pair is None or len(product.inputs) <= max(pair):
            continue
        factors = []
        for rec in scores.path:
            tracked = tracked_slot(rec)
            value = scalar_argument(rec, tracked) if tracked is not None else None
            if value is not None:
                factors.append(Factor(value, rec, "scores"))
        alpha = product.kwargs.get("alpha")
        if isinstance(alpha, (int, float)) and product.op.endswith("baddbmm"):
            factors.append(Factor(float(alpha), product, "scores"))
        factors += _operand_factors(graph, product.inputs[pair[0]], "q")
        factors += _operand_factors(graph, product.inputs[pair[1]], "k")
        if _close(math.prod(f.value for f in factors), d ** -0.5):
            continue  # scaled by 1/sqrt(d) in all: what _judge says first, without the walks below
        if temperature(scores.path) or cosine(graph, product.inputs[pair[0]], product.inputs[pair[1]]):
            continue  # a learned temperature, or cosine similarities: no 1/sqrt(d) is owed
        widths = {_projection_width(analysis, product.inputs[pair[0]]),
                  _projection_width(analysis, product.inputs[pair[1]])}
        found = _judge(analysis, factors, d, product, widths.pop() if len(widths) == 1 else None)
        if found is not None and found.severity == "warning":  # not scaled at all
            if not (projected(analysis, product.inputs[pair[0]])
                    and projected(analysis, product.inputs[pair[1]])):
                continue  # dot-product attention over raw states (Luong's, a first lesson's
                # inputs @ inputs.T) is unscaled by design; the 1/sqrt(d) belongs to projections
        if found is not None:
            yield found
    for rec in analysis.records_of((SDPA,)):
        if rec.error is not None or len(rec.inputs) < 3:
            continue
        picked = _sdpa_scale(rec)
        if picked is None:
            continue
        if cosine(graph, rec.inputs[0], rec.inputs[1]):
            continue  # cosine similarities: a temperature of the code's choosing
        factors = [Factor(picked[0], rec, "sdpa", implicit=picked[1])]
        factors += _operand_factors(graph, rec.inputs[0], "q")
        factors += _operand_factors(graph, rec.inputs[1], "k")
        found = _judge(analysis, factors, rec.inputs[0].shape[-1], rec)
        if found is not None:
            yield found



def temperature(path) -> bool:
    """Whether the scores are multiplied or divided on their way to the softmax by a tensor
    that is not one known number (a learned temperature, ``logit_scale.exp()``): the scale is
    then the model's to learn, and no factor can be judged."""
    for rec in path:
        if rec.op not in MULS and rec.op not in DIVS:
            continue
        tracked = tracked_slot(rec)
        if tracked is not None and scalar_argument(rec, tracked) is None and len(rec.inputs) == 2:
            return True
    return False



def _projection_width(analysis: Analysis, meta) -> int | None:
    """The feature size of the tokens q (or k) is a linear projection of: ``x`` (B, T, 32)
    through ``nn.Linear(32, 16)`` gives 32. None when q is not one projection."""
    graph = analysis.graph
    for _ in range(DEPTH):
        rec = graph.producer(meta)
        if rec is None or not rec.inputs or rec.error is not None:
            return None
        if rec.op in ("F.linear", "torch.addmm", "Tensor.addmm"):
            source = rec.inputs[0] if rec.op == "F.linear" else rec.inputs[1]
            return source.shape[-1] if source.shape else None
        if rec.op in MATMULS and len(rec.inputs) == 2 and rec.inputs[0].shape \
                and not analysis.lineage.batched(rec.inputs[1]):
            return rec.inputs[0].shape[-1]
        if base_name(rec.op) not in PICKS and rec.op not in _TO_SCALE:
            return None
        meta = rec.inputs[0]
    return None



def projected(analysis: Analysis, meta) -> bool:
    """Whether q (or k) is a learned projection of the tokens: a linear map (``F.linear``, or a
    product with a weight that has no batch axis) reached through moves and scalar factors."""
    graph = analysis.graph
    for _ in range(DEPTH):
        rec = graph.producer(meta)
        if rec is None or not rec.inputs or rec.error is not None:
            return False
        if rec.op in _LINEAR_MAPS:
            return True
        if rec.op in MATMULS:
            return any(not analysis.lineage.batched(m) for m in rec.inputs)
        slot = 0
        if scalar_argument(rec, 0) is None and len(rec.inputs) == 2 and scalar_argument(rec, 1) is not None:
            slot = 1
        elif base_name(rec.op) in PICKS:
            pass  # q cut from a fused qkv projection (split, chunk, unbind, [i]) is still one
        elif rec.op not in _TO_SCALE and scalar_argument(rec, 0) is None and rec.op not in _ALONG_FEATURES:
            return False
        meta = rec.inputs[slot]
    return False


#: Linear maps of the features, and ops between a projection and q or k that keep it one
#: (rotary embeddings' elementwise products with tables, norms of q and k).
_LINEAR_MAPS = frozenset({"F.linear", "F.conv1d", "F.conv2d", "torch.addmm", "Tensor.addmm"})


_LINEAR_MAPS = frozenset({"F.linear", "F.conv1d", "F.conv2d", "torch.addmm", "Tensor.addmm"})
_ALONG_FEATURES = frozenset({"+", "Tensor.add", "torch.add", "-", "Tensor.sub", "*", "Tensor.mul",
                             "torch.mul", "F.layer_norm", "F.rms_norm", "Tensor.float",
                             "Tensor.to", "Tensor.type_as", "Tensor.contiguous"})



def cosine(graph, q, k) -> bool:
    """Whether q and k both have rows of unit length (``F.normalize``, or a tensor over its own
    L2 norm), also after ops that keep a row's length (moves, a rotary rotation: products with
    tables and sums of such): their product is a cosine similarity in [-1, 1], which a
    temperature scales, not 1/sqrt(d)."""
    return _unit_rows(graph, q) and _unit_rows(graph, k)


#: ops of a rotary rotation: products with a table, sums and differences of such, negation
_ROTATION = MULS | ADDS | frozenset({"-", "Tensor.sub", "torch.sub", "Tensor.neg", "torch.neg"})
_CUTS = frozenset({"[]", "Tensor.chunk", "torch.chunk", "Tensor.split", "torch.split",
                   "Tensor.unbind", "torch.unbind", "Tensor.narrow"})
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})


def _unit_rows(graph, meta, depth: int = DEPTH + 8) -> bool:
    rec = graph.producer(meta)
    if rec is None or not rec.inputs or depth == 0:
        return False
    if rec.op == "F.normalize":
        return True
    if rec.op in DIVS | MULS and len(rec.inputs) == 2 and _over_own_length(graph, rec):
        return True
    if rec.op in _TO_SCALE:
        return meta.src[1] == 0 and _unit_rows(graph, rec.inputs[0], depth - 1)
    if rec.op in _CUTS:  # halves of a unit row, joined again by a rotation
        return _unit_rows(graph, rec.inputs[0], depth - 1)
    if rec.op in _JOINS:
        return all(_unit_rows(graph, m, depth - 1) for m in rec.inputs)
    full = [m for m in rec.inputs if tuple(m.shape) == tuple(meta.shape)]  # not a table's
    if rec.op not in _ROTATION or not full:
        return False
    if rec.op in MULS:  # a row times a table of the rotation's cosines: one of them a unit row
        return any(_unit_rows(graph, m, depth - 1) for m in full)
    return all(_unit_rows(graph, m, depth - 1) for m in full)


def _over_own_length(graph, rec) -> bool:
    """Whether ``rec`` divides a tensor by its own L2 norm (``t / t.norm(dim=-1)``, clamped or
    with an epsilon)."""
    return any(power == -1.0 and base_name(stat.op) in ("norm", "vector_norm")
               and scaled_from(graph, kept, x)
               for kept, stat, x, power in statistics_applied(graph, rec))


def scores_steps(scores):
    """``(record, the slot carrying the scores, their axis there, their axis after it)`` for
    each step from a product to its softmax (``analysis.graph.Scores``), ``pos`` followed along;
    it stops at the first step the axis cannot be followed through."""
    pos = scores.pos
    for rec in scores.path:
        slot = tracked_slot(rec)
        out_pos = forward_position(rec, slot, pos) if slot is not None else None
        if out_pos is None:
            return
        yield rec, slot, pos, out_pos
        pos = out_pos


def tracked_slot(rec) -> int | None:
    """The input slot of a path record that carries the scores (the first full-shape one)."""
    if not rec.inputs or not rec.outputs:
        return None
    for slot, meta in enumerate(rec.inputs):
        if meta.shape == rec.outputs[0].shape and carries(rec, slot):
            return slot
    return 0
