"""reversed-transpose, discarded-result, dim-collision and non-finite."""

from __future__ import annotations

import ast

from ..analysis.facts import Analysis
from ..base.ops import REVERSALS, WRITES, next_prime, permutation
from ..base.source import call_receiver, file_tree
from ..naming.axes import format_axes
from .fixes import assign_statement, segment, swap_last_two, with_fix
from .registry import diagnostic

# --- reversed-transpose -----------------------------------------------------------------------

#: ``.T`` and ``.t()``, and permutes, which reverse every axis when their order says so.
_MAY_REVERSE = REVERSALS | {"Tensor.permute", "torch.permute"}


def check_reversed(analysis: Analysis):
    dims = analysis.dims
    for rec in analysis.records_of(_MAY_REVERSE):
        if rec.internal or not rec.inputs:
            continue
        meta = rec.inputs[0]
        n = meta.ndim
        if n <= 2:
            continue
        if rec.op in ("Tensor.permute", "torch.permute"):
            if permutation(rec) != list(range(n - 1, -1, -1)):
                continue
            if not getattr(meta.dtype, "is_floating_point", True):  # None: an odd tensor
                continue  # every axis spelled out on indices or a routing mask: an MoE's
                # one_hot(top_k, E).permute(2, 1, 0) to (E, k, tokens) means it
            what = "permute reversing every axis"
        else:
            what = ".T" if rec.op == "Tensor.T" else ".t()"
        before = analysis.shape_of(meta)
        after = format_axes(tuple(reversed(meta.axes)), dims) if meta.axes else str(meta.shape[::-1])
        receiver = call_receiver(rec.source) or "x"
        message = (f"{what} on {receiver} {before} reverses all {n} axes, giving {after}; "
                   f"a batched matrix transpose swaps only the last two")
        hint = f"Use {receiver}.transpose(-2, -1) (or {receiver}.mT) to swap the last two axes."
        seg = segment(rec)
        fix = swap_last_two(seg) if seg is not None else None
        yield diagnostic("reversed-transpose", message, with_fix(hint, fix), rec=rec,
                         before=before, after=after, fix=fix.data() if fix else None)


# --- discarded-result -------------------------------------------------------------------------

def _result_used(rec) -> bool:
    """Whether an output was passed on, returned from a module, or still alive at the end."""
    for meta in rec.outputs:
        if meta.used or meta.ref:
            return True
    return False


def _in_library(rec) -> bool:
    filename = rec.where[0] or ""
    return "site-packages" in filename or "dist-packages" in filename


def check_discarded(analysis: Analysis):
    """Only a result that goes nowhere is flagged: the value of an expression statement
    (``scores.masked_fill(mask, -inf)``), or a local variable that nothing reads afterwards.
    A result handed to code that is not traced (``nn.Parameter(torch.rand(...))``,
    ``register_buffer``, an attribute, a list, a return) is used.

    What the dataflow finds comes first (``rules.dead``: a projection overwritten before use, a
    softmax replaced, a module's output dropped, a layer never called); this statement reading
    adds what dataflow cannot see, at lines it did not report."""
    from .dead import dead_value_findings, unread_layer_findings
    from .dropped_args import dropped_argument_findings

    flowed = dead_value_findings(analysis)
    flowed += [d for d in dropped_argument_findings(analysis)
               if (d.file, d.line) not in {(f.file, f.line) for f in flowed}]
    yield from flowed
    yield from unread_layer_findings(analysis)
    reported = {(d.file, d.line) for d in flowed}
    first_error = None
    unused = []  # records whose results went nowhere, up to the first failure
    for rec in analysis.records:
        if rec.error is not None:
            first_error = rec.index
            break  # the code after a failure never ran
        site = rec.site
        if site is None or site[2] or not rec.outputs:
            continue  # no user line, or called from library code (rec.internal)
        if not _result_used(rec):
            unused.append(rec)
    if not unused:
        return
    sources = _Statements()
    for rec in unused:
        name = rec.op.rsplit(".", 1)[-1]
        if name.endswith("_") or rec.op in WRITES or "out" in rec.kwargs:
            continue
        if _in_library(rec):
            continue  # unused intermediates inside an installed library are not the user's bug
        kind, statement = sources.kind(rec)
        if kind not in ("alone", "dead", "listed"):
            continue  # returned, or passed to code the trace does not see
        if first_error is not None and kind != "alone":
            continue  # assigned, but the line that would have used it never ran
        if not rec.module and not _has_inplace_twin(name):
            continue  # script or notebook code outside any module: a bare `(a - b).sum()` is
            # a look at a value; only an op that reads as in-place (masked_fill) is a slip there
        if (rec.file, rec.line) not in reported:
            yield _discarded(rec, name, kind, statement, analysis.records)


def _has_inplace_twin(name: str) -> bool:
    """Whether ``Tensor.<name>_`` exists: ``masked_fill`` reads as if it changed its tensor."""
    import torch

    return hasattr(torch.Tensor, name + "_")


class _Statements:
    """What the statement around an op does with its value: ``"alone"`` (an expression
    statement, ``scores.masked_fill(...)``), ``"listed"`` (an element of a comprehension whose
    list is such a statement), ``"dead"`` (assigned to a local variable that the
    function never reads), ``"returned"`` (return, yield, a lambda's body), or ``"other"``.
    Each file is parsed once (``base.source.file_tree``)."""

    def kind(self, rec) -> tuple[str, ast.stmt | None]:
        filename, line, col, end_col = rec.where
        tree = self._tree(filename)
        if tree is None or line is None:
            return "other", None
        inside = []  # nodes enclosing the op, outermost first
        for node in ast.walk(tree):
            if isinstance(node, (ast.stmt, ast.Lambda)) and _spans(node, line, col, end_col):
                inside.append(node)
        if not inside:
            return "other", None
        if any(isinstance(n, (ast.Return, ast.Lambda)) for n in inside):
            return "returned", None
        innermost = min((n for n in inside if isinstance(n, ast.stmt)),
                        key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset),
                        default=None)
        if isinstance(innermost, ast.Expr):
            value = innermost.value
            if isinstance(value, (ast.Yield, ast.YieldFrom, ast.Await)):
                return "returned", None
            if _is_op(value, rec, line, col, end_col):
                return "alone", innermost
            if isinstance(value, (ast.ListComp, ast.SetComp)) \
                    and _is_op(value.elt, rec, line, col, end_col):
                return "listed", innermost  # [t.view(...) for t in qkv] on its own: list dropped
        if isinstance(innermost, ast.Assign) and len(innermost.targets) == 1 \
                and isinstance(innermost.targets[0], ast.Name) \
                and _is_op(innermost.value, rec, line, col, end_col):
            function = next((n for n in reversed(inside)
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
            if function is not None and not _reads(function, innermost.targets[0].id):
                return "dead", innermost
        return "other", None

    def _tree(self, filename):
        return file_tree(filename)


def _is_op(value: ast.expr, rec, line, col, end_col) -> bool:
    """Whether ``value`` is the expression the op ran (over one line or several)."""
    if (value.lineno, value.col_offset) != (line, col):
        return False
    if end_col is None:  # the op's text goes on over more lines: its start must match
        return value.end_lineno != value.lineno
    return value.end_lineno == line and value.end_col_offset == end_col \
        or ast.unparse(value) == _normalise(rec.source)


def _reads(function: ast.AST, name: str) -> bool:
    """Whether a function reads the local ``name`` anywhere (or may reach it some other way)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("locals", "vars", "eval", "exec"):
            return True
    return False


def _spans(node, line, col, end_col) -> bool:
    if not (node.lineno <= line <= node.end_lineno):
        return False
    if col is None:
        return True
    if node.lineno == line and node.col_offset > col:
        return False
    if node.end_lineno == line and end_col is not None and node.end_col_offset < end_col:
        return False
    return True


def _normalise(source: str) -> str:
    try:
        return ast.unparse(ast.parse(source.strip(), mode="eval").body)
    except SyntaxError:
        return source.strip()


# Ops with an in-place twin that is the natural fix (``masked_fill_``); for the others
# (``transpose_``, ``view``) only the assignment is suggested.
_IN_PLACE_FIX = {"masked_fill", "clamp", "clip", "add", "sub", "mul", "div", "tril", "triu",
                 "fill", "relu", "exp", "log", "sqrt", "pow", "neg", "abs", "sigmoid", "tanh",
                 "nan_to_num", "index_fill", "masked_scatter", "scatter", "index_add",
                 "index_copy", "normal", "uniform", "zero", "copy", "clamp_min", "clamp_max"}


def _statement_text(rec, statement) -> str:
    """The whole expression of the statement, over as many lines as it takes, on one line."""
    if statement is None:
        return rec.source or rec.op
    value = statement.value
    if value.end_lineno == value.lineno:
        return rec.source or ast.unparse(value)
    return ast.unparse(value)


def _discarded(rec, name: str, kind: str, statement, records: list):
    if kind == "listed":
        message = (f"the result of {rec.source or rec.op} is never used: the list the comprehension "
                   f"builds is not kept")
        hint = "Assign the list and use it (q, k, v = [...]), or delete the line."
        return diagnostic("discarded-result", message, hint, rec=rec, statement=kind)
    source = _statement_text(rec, statement)
    receiver = call_receiver(source) if rec.op.startswith("Tensor.") else None
    if kind == "dead":
        from .dead import made_from_sizes, placeholder_finding

        variable = statement.targets[0].id
        if made_from_sizes(records, rec):
            return placeholder_finding(rec, source, variable, statement)
        message = (f"the result of {source} is never used: no later op reads it ({variable} "
                   f"is never read after line {statement.lineno})")
        hint = (f"Use {variable} where it was meant to go (a later line may read the variable "
                f"it came from instead), or delete the line.")
    elif receiver:
        message = (f"the result of {source} is never used: {name} returns a new tensor and leaves "
                   f"{receiver} unchanged")
        fix = assign_statement(rec, statement)
        if fix is not None or receiver.isidentifier():
            hint = f"Assign it: {receiver} = {receiver}.{name}(...)"
            if name in _IN_PLACE_FIX:
                hint += f", or use the in-place {receiver}.{name}_(...)"
            hint = with_fix(hint + ".", fix)
            return diagnostic("discarded-result", message, hint, rec=rec, statement=kind,
                              fix=fix.data() if fix else None)
        hint = "Assign the result to a variable and use it."
    else:
        message = f"the result of {source} is never used"
        hint = "Assign the result to a variable and use it, or delete the line."
    return diagnostic("discarded-result", message, hint, rec=rec, statement=kind)


# --- dim-collision ----------------------------------------------------------------------------

_HIDDEN = {
    frozenset("BT"): "a batch/time swap such as (B, T, C) read as (T, B, C) reshapes without "
                     "complaint, and a mix of samples looks like a mix of positions",
    frozenset("Hd"): "heads and head size can be swapped unseen ((B, T, d, H) passes for "
                     "(B, T, H, d)), and a scale of 1/sqrt(H) looks like 1/sqrt(d)",
    frozenset("TS"): "queries and keys of a cross-attention can be swapped unseen, and "
                     "q @ k without .transpose(-2, -1) runs",
    frozenset("Td"): "q @ k without .transpose(-2, -1) runs, and a softmax over the head size "
                     "looks like one over the keys",
    frozenset("BH"): "a softmax or mean over the batch looks like one over the heads",
    frozenset("TH"): "a softmax over the heads looks like one over the keys",
    frozenset("Bd"): "batch and head-size axes can be swapped unseen",
    frozenset("TL"): "a mask or position table not cut to the sequence ([:T, :T]) runs only "
                     "because T is the full block size",
}


def _shared_sizes(dims) -> list[tuple[list[str], int]]:
    """The names that share one size, grouped: ``(["T", "H", "d"], 8)``."""
    groups: dict[int, list[str]] = {}
    for a, b, size in dims.collisions():
        names = groups.setdefault(size, [a])
        if b not in names:
            names.append(b)
    return [(names, size) for size, names in groups.items()]


def _listed(names: list[str]) -> str:
    return " and ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + f" and {names[-1]}"


def check_collisions(analysis: Analysis):
    dims = analysis.dims
    groups = _shared_sizes(dims)
    if not groups:
        return
    in_use = {s for rec in analysis.records for m in (*rec.inputs, *rec.outputs) for s in m.shape}
    own_sizes = getattr(dims, "strict", False)  # the user's sizes: a shared size prints as a number
    for names, size in groups:
        if analysis.records and size not in in_use:
            continue  # no axis of that size was traced: nothing can be confused
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        hidden = [_HIDDEN[frozenset(p)] for p in pairs
                  if len(p[0]) == len(p[1]) == 1 and frozenset(p) in _HIDDEN]
        if len(hidden) > 3:
            hidden = [*hidden[:3], "and more"]
        if not hidden:
            hidden = [f"an axis of size {size} could be {' or '.join(names)}, so a swap or mix "
                      f"of them cannot be seen"]
        both = "both" if len(names) == 2 else "all"
        printed = ((f"shapes print the number {size}, not a name, for {both} of them, except where a "
                    f"view or reshape in the code names its axis") if own_sizes
                   else f"shapes print {names[0]} for {both}")
        message = (f"{_listed(names)} are {both} {size} in this run: {'; '.join(hidden)}. "
                   f"reshape-jumble, softmax-axis and silent-broadcast lose their power over "
                   f"these axes, and {printed}")
        suggestion = next_prime(3, avoid=set(dims.values()))
        if own_sizes:  # sizes the code runs at: the data's are the easiest to change
            change = next((n for n in ("B", "T", "S") if n in names), None)
            hint = ("To tell them apart, check the module with python -m shapetrace, which "
                    "gives every dim a distinct prime")
            hint = (f"{hint}, or run once with {change}={suggestion}." if change else f"{hint}.")
        else:
            a, b = names[0], names[1]
            change = a if a in dims.explicit and b not in dims.explicit else b
            hint = (f"Give {change} a size of its own, a prime no other dim uses "
                    f"(e.g. {change}={suggestion}).")
        yield diagnostic("dim-collision", message, hint, record=-1, names=names, size=size)
