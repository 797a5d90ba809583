"""Whether a forward takes its sequences time-first, as its author states it.

Inputs guessed from parameter names are batch-first (``x`` -> B,T,C). Some textbooks and
libraries write time-first code (``[seq_len, batch_size, d_model]``: the framework's own
language-model tutorial, nn.MultiheadAttention's default, labml's annotated implementations).
Handing such a forward batch-first data makes a correct model mix samples, which would be a
false batch-leak. Only the author's own words count as evidence, never a guess from the ops:

- an unpacking of an argument's shape with named sizes, time first and batch second
  (``seq_len, batch_size, _ = query.shape``);
- a docstring that gives a shape as ``[seq_len, batch_size, ...]`` or ``Time x Batch x Channel``
  (of its shapes, those with the most axes: a time-first module's masks are batch-first);
- a table of positions cut to the argument's first axis, ``self.pe[:x.size(0)]`` (the older
  tutorial's positional encoding), where batch-first code cuts ``self.pe[:, :x.size(1)]``;
- an argument's axis read into a size's word: ``bsz = x.size(1)``, ``seq_len = x.shape[0]``.

After a run, one more kind: inputs guessed batch-first that reach an op taking its sequences
first (``nn.MultiheadAttention`` without ``batch_first=True``) as they came, in a forward whose
author says nothing of the layout, are read time-first (``sequence_first_reading``).

What the code reads of its arguments' shapes outranks the docstring, which counts only when the
code reads nothing. Either kind that says batch-first (``B, T, C = x.shape``) anywhere in the
forward cancels it.
Importing this module does not import torch. The words for a size are the vocabulary's
(``base.names.DIM_WORDS``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from collections.abc import Callable

from ..analysis.handed import handed
from ..base.names import dim_of_word
from ..base.ops import LAYER_OPS, MHA_FORWARD

#: a shape written in brackets after the word: what is inside them
_SHAPE_TEXT = re.compile(r"shape[^\[\(\n]{0,40}[\[\(]([^\]\)\n]{1,120})[\]\)]", re.IGNORECASE)
#: a shape written with crosses, three axes at least: ``Time x Batch x Channel``
_CROSSED = re.compile(r"\b([A-Za-z_]\w*)\s+[x×]\s+([A-Za-z_]\w*)\s+[x×]\s+[A-Za-z_]\w*")


def time_first(forward: Callable, params: list[str], owner: type | None = None) -> bool:
    """True when ``forward``'s author says its sequences come time-first (see the module). A
    forward that says nothing inherits what the nearest base class's forward says (a subclass
    that builds a mask and calls ``super().forward(x, x, x, mask)``)."""
    votes = _stated(forward, params)
    if not votes:  # the author may say it where the forward hands its inputs on as they came
        votes = _handed_on(forward, params, owner)
    if not votes and isinstance(owner, type):
        for base in owner.__mro__[1:]:
            other = vars(base).get("forward")
            if other is None or not callable(other) or other is forward:
                continue
            try:
                names = list(inspect.signature(other).parameters)[1:]
            except (TypeError, ValueError):
                break
            votes = _stated(other, names)
            if votes:
                break
    return votes == {"time-first"}


#: how many hand-offs deep an input handed on as it came is followed (forward -> helper -> ...)
_HANDED_DEPTH = 2


def _handed_on(forward: Callable, params: list[str], owner: type | None) -> set[str]:
    """The layouts stated where ``forward`` hands one of its ``params`` on as it came
    (``analysis.handed``): to a function of the user's module (``multi_head_attention_forward_rpr(
    query, key, ...)``), a method of its own, or a submodule of the user's class built in the
    constructor (``self.self_attn(src, src, src)``): what that code reads of the parameter it
    receives (its shape unpacked ``tgt_len, bsz, _ = query.size()``)."""
    votes: set[str] = set()
    for name in params:
        for func, there in list(handed(forward, name, owner, depth=_HANDED_DEPTH))[1:]:
            votes |= set(_unpackings(func, [there]))
    return votes


def code_layout(forward: Callable, params: list[str]) -> set[str]:
    """The layouts the code itself says by what it reads of its arguments' shapes (no
    docstring): ``{"batch-first"}``, ``{"time-first"}``, both (they disagree) or none."""
    return set(_unpackings(forward, params))


def _stated(forward: Callable, params: list[str]) -> set[str]:
    """The layouts the author states: what the code reads of its arguments' shapes, and only
    when it reads nothing, what its docstring writes (``tgt_len, bsz, _ = query.size()`` over
    a docstring whose only bracketed shape is a padding mask's ``(batch, src_len)``)."""
    return code_layout(forward, params) or set(_docstring(forward))


def _order(first: str, second: str) -> str | None:
    a, b = dim_of_word(first), dim_of_word(second)
    if a in ("T", "S") and b == "B":
        return "time-first"
    if a == "B" and b in ("T", "S"):
        return "batch-first"
    return None


def _unpackings(forward: Callable, params: list[str]):
    try:
        source = textwrap.dedent(inspect.getsource(forward))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return
    moved = _axes_moved(tree, params)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        # a read after ``x = x.transpose(0, 1)`` is of x with its first two axes swapped: it
        # says the other order of x as it came; after any other move it says nothing
        here = [p for p in params if p not in moved or moved[p][0] >= line]
        order = _table_cut(node, here) or _size_named(node, here)
        swapped = [p for p in params if p in moved and moved[p][0] < line and moved[p][1]]
        if not order and swapped:
            order = _FLIPPED.get(_table_cut(node, swapped) or _size_named(node, swapped))
        if order:
            yield order
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)):
            continue
        if _shape_of(node.value) not in here:
            continue
        names = [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
        square = len({n for n in names if n.strip("_")}) < len([n for n in names if n.strip("_")])
        if square:  # ``bsz, n, n = mask.shape``: a tensor over pairs of positions (a mask, a
            continue  # bias), batch-first whatever layout the sequences come in
        if len(names) == len(node.targets[0].elts) and len(names) >= 2:
            order = _order(names[0], names[1]) or _one_named(names)
            if order:
                yield order


#: calls that move an argument's axes (``x.transpose(0, 1)``, ``rearrange(x, "t b c -> b t c")``)
_MOVES = frozenset({"transpose", "permute", "swapaxes", "swapdims", "movedim", "moveaxis", "t",
                    "rearrange", "einsum"})


_FLIPPED = {"time-first": "batch-first", "batch-first": "time-first"}


def _axes_moved(tree: ast.AST, params: list[str]) -> dict[str, tuple[int, bool]]:
    """param -> ``(line, swapped)``: the first line that binds it again with its axes moved
    (``x = x.transpose(0, 1)``), and whether that move only swaps its first two axes. What the
    code reads of it after that line is not its layout as it came."""
    found: dict[str, tuple[int, bool]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in params):
            continue
        name = node.targets[0].id
        for call in ast.walk(node.value):
            func = call.func if isinstance(call, ast.Call) else None
            called = func.attr if isinstance(func, ast.Attribute) else \
                func.id if isinstance(func, ast.Name) else None
            if called in _MOVES or isinstance(call, ast.Attribute) and call.attr in ("T", "mT"):
                if name not in found or node.lineno < found[name][0]:
                    found[name] = (node.lineno, _swaps_first_two(call))
                break
    return found


def _swaps_first_two(call: ast.AST) -> bool:
    """``t.transpose(0, 1)`` or ``t.swapaxes(1, 0)``: the first two axes swapped, nothing else."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
        and call.func.attr in ("transpose", "swapaxes", "swapdims") and len(call.args) == 2 \
        and all(isinstance(a, ast.Constant) for a in call.args) \
        and {a.value for a in call.args} == {0, 1}


def _one_named(names: list[str]) -> str | None:
    """``_, seq_len, _ = x.size()``: one word for the batch or the sequence among the first two
    (the others left ``_``) says the order as well."""
    if sum(word.strip("_") != "" for word in names[:2]) != 1:
        return None  # both named: their order is read by _order
    for position, word in enumerate(names[:2]):
        if word.strip("_") == "":
            continue
        dim = dim_of_word(word)
        if dim in ("T", "S"):
            return "batch-first" if position == 1 else "time-first"
        if dim == "B":
            return "batch-first" if position == 0 else "time-first"
        return None
    return None


def _table_cut(node: ast.AST, params: list[str]) -> str | None:
    """``self.pe[:x.size(0)]`` says time-first, ``self.pe[:, :x.size(1)]`` batch-first."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"):
        return None
    index = node.slice
    items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    for axis, item in enumerate(items[:2]):
        if not isinstance(item, ast.Slice) or item.lower is not None or item.step is not None:
            return None
        if item.upper is None:
            continue
        size = _axis_size(item.upper, params)
        if size is None:
            return None
        if (axis, size) == (0, 0):
            return "time-first"
        if (axis, size) == (1, 1):
            return "batch-first"
        return None
    return None


def _size_named(node: ast.AST, params: list[str]) -> str | None:
    """``bsz = x.size(1)`` or ``seq_len = x.shape[0]`` says time-first; ``batch_size =
    x.size(0)`` or ``T = x.shape[1]`` batch-first: an argument's axis read into a size's word."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)):
        return None
    axis = _axis_size(node.value, params)
    if axis not in (0, 1):
        return None
    word = node.targets[0].id
    dim = dim_of_word(word) if word not in ("n", "N") else None  # n: a batch in some code
    if dim == "B":
        return "time-first" if axis == 1 else "batch-first"
    if dim in ("T", "S"):
        return "time-first" if axis == 0 else "batch-first"
    return None


def _axis_size(value: ast.expr, params: list[str]) -> int | None:
    """``x.size(0)`` / ``x.shape[0]`` / ``len(x)`` of an argument: the axis read, else None."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "len" \
            and len(value.args) == 1 and isinstance(value.args[0], ast.Name) \
            and value.args[0].id in params:
        return 0
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "size" and len(value.args) == 1:
        owner, axis = value.func.value, value.args[0]
    elif isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) \
            and value.value.attr == "shape":
        owner, axis = value.value.value, value.slice
    else:
        return None
    if isinstance(owner, ast.Name) and owner.id in params and isinstance(axis, ast.Constant) \
            and isinstance(axis.value, int):
        return axis.value
    return None


def _shape_of(value: ast.expr) -> str | None:
    """The argument whose shape ``value`` reads: ``x.shape``, ``x.size()``, ``x.shape[:2]``."""
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and not value.args and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "size":
        value = value.func
    elif not (isinstance(value, ast.Attribute) and value.attr == "shape"):
        return None
    inner = value.value
    return inner.id if isinstance(inner, ast.Name) else None


def _docstring(forward: Callable):
    """The orders the docstring's shapes state, those with the most axes only: a time-first
    module's masks are batch-first, (batch, src_len), beside its (T, B, C) data. A shape is
    written in brackets (``shape [seq_len, batch_size, d_model]``) or with crosses (``Input
    shape: Time x Batch x Channel``)."""
    doc = inspect.getdoc(forward) or ""
    found: list[tuple[int, str]] = []
    for inner in _SHAPE_TEXT.findall(doc):
        names = [n.strip(" `") for n in inner.split(",")]
        order = _order(names[0], names[1]) if len(names) >= 2 else None
        if order:
            found.append((len(names), order))
    for first, second in _CROSSED.findall(doc):
        order = _order(first, second)
        if order:
            found.append((3, order))
    most = max((n for n, _ in found), default=0)
    for n, order in found:
        if n == most:
            yield order


def swapped(spec):
    """``spec`` time-first: (B, T, C) -> (T, B, C), (B, S, C) -> (S, B, C), (B, T) -> (T, B)."""
    if len(spec.dims) >= 2 and spec.dims[0] == "B" and spec.dims[1] in ("T", "S"):
        return dataclasses.replace(spec, dims=(spec.dims[1], "B", *spec.dims[2:]))
    return spec


def batch_first(spec):
    """``spec`` batch-first: (T, B, C) -> (B, T, C), (S, B, C) -> (B, S, C)."""
    if len(spec.dims) >= 2 and spec.dims[0] in ("T", "S") and spec.dims[1] == "B":
        return dataclasses.replace(spec, dims=("B", spec.dims[0], *spec.dims[2:]))
    return spec


#: ops that take their sequences time-first, (T, B, C), whatever the module's ``batch_first``
#: (``nn.MultiheadAttention`` transposes batch-first inputs before it calls them)
_SEQUENCE_FIRST_OPS = frozenset({MHA_FORWARD})


def fed_batch_first(records, dims) -> object | None:
    """The first op that takes its sequences time-first (``nn.MultiheadAttention``'s) and was
    handed a query with the probe batch size on its first axis and a sequence length on its
    second: inputs guessed batch-first that reached it as they came, in a module written
    time-first. None when there is none."""
    batch = dims.get("B")
    lengths = {dims[k] for k in ("T", "S") if k in dims}
    for rec in records:
        if rec.op not in _SEQUENCE_FIRST_OPS or not rec.inputs:
            continue
        shape = tuple(rec.inputs[0].shape)
        if len(shape) == 3 and shape[0] == batch and shape[1] in lengths and batch not in lengths:
            return rec
    return None


def sequences_first(spec):
    """``spec`` time-first when it holds vectors of a sequence (three axes or more, batch then
    time): (B, T, C) -> (T, B, C); masks and ids of two axes are left as they are."""
    if len(getattr(spec, "dims", ())) >= 3:
        return swapped(spec)
    return spec


def sequence_first_reading(plan, chosen, run):
    """``(attempt, note)``: the plan's guessed inputs taken time-first and run again (``run``),
    when the first attempt (``chosen``) handed its batch-first guess as it came to an op that
    takes sequences time-first (``fed_batch_first``) and the time-first reading runs without
    doing so; else None. Declared inputs are never read another way."""
    if plan.request.inputs is not None:
        return None
    rec = fed_batch_first(chosen.trace.records, plan.dims)
    if rec is None or _states_batch_first(getattr(chosen.model, "forward", None)):
        return None
    inputs = tuple(sequences_first(spec) for spec in plan.inputs)
    if inputs == tuple(plan.inputs):
        return None
    where = f" at {rec.file}:{rec.line}" if rec.file and rec.line else ""
    note = (f"inputs taken time-first, as (T, B, C): the guessed batch-first inputs reached "
            f"{rec.op}{where} as they came, and it takes its sequences first "
            f"(nn.MultiheadAttention without batch_first=True); give --input to say otherwise")
    other = dataclasses.replace(plan, inputs=inputs, note=note)
    again = run(other)
    if not again.ran or fed_batch_first(again.trace.records, plan.dims) is not None:
        return None
    return again, note


def _states_batch_first(forward) -> bool:
    """Whether ``forward``'s author says its inputs come batch-first: an annotation on an
    argument (``Float[Tensor, "B T C"]``), an unpacking ``B, T, C = x.shape`` or a docstring
    shape. Then a time-first op handed them as they come is the author's bug, reported."""
    try:
        params = list(inspect.signature(forward).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(_shape_annotation(p.annotation) for p in params):
        return True
    names = [p.name for p in params]
    return "batch-first" in _stated(forward, names)


def _shape_annotation(annotation) -> bool:
    """An annotation that gives a tensor's axes (jaxtyping's ``Float[Tensor, "B T C"]``, also
    written as a string), not just its type (``Optional[Tensor]``)."""
    if getattr(annotation, "dim_str", None):
        return True
    return isinstance(annotation, str) and bool(re.search(r"Tensor\s*,\s*['\"]", annotation))


#: findings whose meaning depends on which axis is the batch and which the sequence
LAYOUT_RULES = frozenset({"batch-leak", "position-axis", "causal-leak"})


def layout_stated(model) -> bool:
    """Whether the code says which axis of its inputs is the batch: a shape annotation, an
    unpacking, a size read into a word, a docstring shape or an einops pattern in the forward
    of the module or of any module of the user's inside it (a block whose attention unpacks
    ``B, T, C = x.shape``), or a layer built with ``batch_first=True`` inside it."""
    seen: set = set()
    for module in getattr(model, "modules", lambda: [model])():
        cls = type(module)
        if getattr(module, "batch_first", None) is True:  # nn.MultiheadAttention(batch_first=True)
            return True
        if cls in seen or cls.__module__.startswith("torch."):
            continue
        seen.add(cls)
        forward = getattr(module, "forward", None)
        try:
            params = list(inspect.signature(forward).parameters.values())
        except (TypeError, ValueError):
            continue
        if any(_shape_annotation(p.annotation) for p in params):
            return True
        names = [p.name for p in params]
        if set(_unpackings(forward, names)) | set(_docstring(forward)) | set(_patterns(forward)):
            return True
    return False


def assume_layout(diagnostics, guessed: tuple[str, ...]) -> None:
    """Errors that depend on the layout, in a run whose inputs' layout was guessed from their
    names (``guessed``: their names) and that nothing in the code states, become warnings that
    say what was assumed: a guess is no ground for a verdict."""
    names = ", ".join(guessed)
    for diag in diagnostics:
        if diag.rule in LAYOUT_RULES and diag.severity == "error":
            diag.severity = "warning"
            diag.message += (f" (assumed: {names} batch-first, batch then sequence, a guess "
                             f"from the names that nothing in the code confirms; give --input "
                             f"to check it as an error)")


def assume_aligned(diagnostics, sequences: list[str]) -> None:
    """A causal leak seen only through inputs guessed as long as the first sequence (``h``
    beside ``x``, both T): whether their positions are the output's is a guess (an encoder's
    output handed to a decoder is context, read whole). Such errors become warnings that say
    what was assumed. ``sequences``: the guessed inputs of length T, the first one first."""
    if len(sequences) < 2:
        return
    for diag in diagnostics:
        sources = (diag.data or {}).get("sources")
        if diag.rule != "causal-leak" or diag.severity != "error" or not sources \
                or sequences[0] in sources:
            continue
        diag.severity = "warning"
        others = ", ".join(s for s in sources if s in sequences) or ", ".join(sources)
        diag.message += (f" (assumed: {others} along the positions of {sequences[0]}, a guess; "
                         f"another sequence, an encoder's output, is read whole by design; give "
                         f"--input {sources[0]}=... (S for its own length) to check it as an error)")


#: findings whose verdict rests on the size of the axis q·k sums over
_WIDTH_RULES = frozenset({"attention-scale", "attention-textbook"})


def assume_width(diagnostics, records, guessed: dict) -> None:
    """A scale judged on queries or keys the forward takes as they came (a scaled-dot-product
    module handed q, k and v), in a run that guessed them from their names as (B, T, C): the
    axis they sum over is the width the guess gave them, which the module may take per head
    (B, H, T, d). Such errors become warnings that say what was assumed. ``guessed``: the
    guessed inputs, name -> tensor."""
    if not guessed:
        return
    shapes = {tuple(t.shape): name for name, t in guessed.items()}
    for diag in diagnostics:
        if diag.rule not in _WIDTH_RULES or diag.severity != "error" or diag.record is None:
            continue
        if not 0 <= diag.record < len(records):
            continue
        names = _inputs_behind(records[diag.record], records, shapes)
        if names:
            diag.severity = "warning"
            diag.message += (f" (assumed: {', '.join(sorted(names))} (B, T, C), as guessed from "
                             f"the names, their last axis the width; give --input, e.g. "
                             f"q=B,H,T,d, to check it as an error)")


def _inputs_behind(rec, records, shapes: dict) -> set[str]:
    """The guessed inputs an op reads as they came in, or through moves and scalings only (no
    layer between: what a projection makes is the module's own)."""
    found, todo, seen = set(), list(rec.inputs), set()
    while todo and len(seen) < 200:
        meta = todo.pop()
        if meta.src is None:
            if tuple(meta.shape) in shapes:
                found.add(shapes[tuple(meta.shape)])
            continue
        if meta.src in seen:
            continue
        seen.add(meta.src)
        maker = records[meta.src[0]]
        if maker.op not in LAYER_OPS:
            todo.extend(maker.inputs)
    return found


def _patterns(forward: Callable):
    """An einops pattern's first axis: ``'b n (h d) -> ...'`` says batch-first."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(forward)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "->" in node.value:
            words = re.findall(r"[A-Za-z_]\w*", node.value.split("->")[0])
            if len(words) >= 2:
                order = _order(words[0], words[1])
                if order:
                    yield order
