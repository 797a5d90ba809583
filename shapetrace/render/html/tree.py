"""The trace as a tree of modules: one ``<details>`` per module, its ops in order inside.

Built from the trace's JSON (what a pytest-xdist worker sends) and the entry's extras (record
indices, optimizer steps, which ops library code ran). A clean trace is collapsed; the modules
down to the first finding are open. What the terminal folds folds here too (``render.fold``):
repeated blocks (one copy, then a line with the count), an optimizer step or a layer's
initialisation (one line), and loops (one iteration under ``x 8 iterations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...base.ops import display_name
from .. import fold as _fold
from .text import esc, shape_html


@dataclass
class _Op:
    """A trace entry with the attributes the folding reads, as an ``OpRecord`` has them."""

    index: int
    op: str
    module: str
    line: int | None
    source: str
    inputs: tuple
    outputs: tuple
    error: tuple | None
    site: tuple | None  # one object per (file, line): what the folding compares
    internal: bool
    item: dict


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    label: str


@dataclass
class _Node:
    """A module, or a loop (``loop`` set): its parts are nodes and ops' or folds' HTML."""

    path: str
    parts: list = field(default_factory=list)
    ops: int = 0
    flagged: int = 0
    open: bool = False
    loop: _fold.Loop | None = None


def _ops(trace: list[dict], extras: dict, max_ops: int | None) -> list[_Op]:
    indices = extras.get("indices") or range(len(trace))
    internal = set(extras.get("internal") or ())
    shown = trace if max_ops is None else trace[:max_ops]
    sites: dict = {}
    files: dict = {}
    ops = []
    for index, t in zip(indices, shown):
        file, line = t.get("file"), t.get("line")
        site = None
        if file or line:
            token = files.setdefault(file, object())
            site = sites.setdefault((file, line), (token, line))
        error = t.get("error")
        ops.append(_Op(index, t["op"], t.get("module") or "", line, t.get("source") or "",
                       tuple(t.get("inputs", ())), tuple(t.get("outputs", ())),
                       tuple(error.partition(": ")[::2]) if error else None, site,
                       index in internal, t))
    return ops


def _ins(shapes) -> str:
    return ", ".join(shape_html(s) for s in shapes[:3]) + (", …" if len(shapes) > 3 else "")


def _op_html(op: _Op, severity: str | None, ids) -> str:
    mark = {"error": "✗", "warning": "!", "info": "i"}.get(severity or "", "")
    name = display_name(op.op, op.source)
    outs = op.outputs
    if op.error:
        result = f'<span class="raised">raised {esc(op.item.get("error"))}</span>'
    elif len(outs) > 1 and len(set(outs)) == 1:
        result = f"{len(outs)} × {shape_html(outs[0])}"
    else:
        result = _ins(outs)
    finding = ids.finding_of(op.index)
    mark_html = f'<a class="mk" href="#{finding}" title="the finding">{mark}</a>' if finding \
        else f'<span class="mk">{mark}</span>'
    return (f'<div class="op{" " + severity if severity else ""}" id="{ids.op(op.index)}">'
            f'{mark_html}<span class="ln">{op.line or ""}</span>'
            f'<span class="name">{esc(name)}</span>'
            f'<span class="io">{_ins(op.inputs)} → {result}</span>'
            f'<code class="src">{esc(op.source)}</code></div>')


def _call_html(call: _fold.Call) -> str:
    """An optimizer step or a layer's initialisation: one line, the shapes it made."""
    first = call.recs[0]
    made: list[str] = []
    for r in call.recs:
        for shape in r.outputs:
            if shape not in made:
                made.append(shape)
    on = f" on {_ins(made)}" if made else ""
    return (f'<div class="op call"><span class="mk"></span><span class="ln">{first.line or ""}'
            f'</span><span class="name">{esc(call.label)}</span><span class="io">'
            f'<span class="muted">{len(call.recs)} ops</span>{on}</span>'
            f'<code class="src">{esc(first.source)}</code></div>')


def _fold_html(node: _fold.Fold) -> str:
    return (f'<div class="fold">… {esc(node.first)} to {esc(node.last)} repeat the ops above '
            f'(<b>{node.count}</b> blocks)</div>')


def _modules_in(nodes) -> list[str]:
    out = []
    for node in nodes:
        if isinstance(node, _fold.Op):
            out.append(node.rec.module)
        elif isinstance(node, _fold.Call):
            out.extend(r.module for r in node.recs)
        elif isinstance(node, _fold.Fold):
            out.append(node.first.rpartition(".")[0])
        else:
            out.extend(_modules_in(node.body))
    return out


def _common(paths: list[str]) -> str:
    """The deepest module that holds every path ("" for none)."""
    if not paths:
        return ""
    parts = paths[0].split(".")
    for path in paths[1:]:
        other = path.split(".")
        n = 0
        while n < min(len(parts), len(other)) and parts[n] == other[n]:
            n += 1
        parts = parts[:n]
    return ".".join(parts)


class _Builder:
    def __init__(self, flagged: dict[int, str], ids):
        self.flagged = flagged
        self.ids = ids
        self.first_flag = min(flagged) if flagged else None
        self.shown: set[int] = set()

    def build(self, nodes: list, base: _Node) -> _Node:
        """Puts ``nodes`` into ``base`` and the modules under it; returns ``base``."""
        stack = [base]

        def enter(path: str) -> _Node:
            while len(stack) > 1 and not (path == stack[-1].path
                                          or path.startswith(stack[-1].path + ".")):
                stack.pop()
            top = stack[-1]
            if path and path != top.path and (not top.path or path.startswith(top.path + ".")):
                rest = path[len(top.path) + 1:] if top.path else path
                for part in rest.split("."):
                    node = _Node(f"{top.path}.{part}" if top.path else part)
                    top.parts.append(node)
                    stack.append(node)
                    top = node
            return top

        def count(ops: int, flagged: int, first: bool) -> None:
            for n in stack:
                n.ops += ops
                n.flagged += flagged
                n.open = n.open or first

        for node in nodes:
            if isinstance(node, _fold.Op):
                op = node.rec
                enter(op.module).parts.append(_op_html(op, self.flagged.get(op.index), self.ids))
                self.shown.add(op.index)
                count(1, op.index in self.flagged, op.index == self.first_flag)
            elif isinstance(node, _fold.Call):
                enter(node.recs[0].module).parts.append(_call_html(node))
                count(len(node.recs), 0, False)
            elif isinstance(node, _fold.Fold):
                enter(node.first.rpartition(".")[0]).parts.append(_fold_html(node))
            else:
                path = _common(_modules_in(node.body))
                holder = enter(path)
                loop = self.build(node.body, _Node(holder.path, loop=node))
                holder.parts.append(loop)
                count(loop.ops, loop.flagged, loop.open)
        return base


def trace_tree(trace: list[dict], flagged: dict[int, str], ids, *, clean: bool,
               max_ops: int | None = None, extras: dict | None = None) -> tuple[str, set[int]]:
    """The trace as nested ``<details>``, and the indices of the ops it shows."""
    extras = extras or {}
    ops = _ops(trace, extras, max_ops)
    spans = [_Span(*s) for s in extras.get("spans") or ()]
    builder = _Builder(flagged, ids)
    nodes = []
    steps = [_fold.StepHeader(*s) for s in extras.get("steps") or ()]
    for segment in _segments(ops, extras.get("repeats") or ()):
        if isinstance(segment, tuple):  # a run the plugin kept once: a loop of its count
            body, count = segment
            folded = _fold.fold(body, flagged, _same, spans)
            lines = _fold._lines(folded)
            nodes.append(_fold.Loop(folded, count, False, lines))
        else:
            nodes.extend(_fold.fold(segment, flagged, _same, spans, steps=steps))
    root = builder.build(nodes, _Node(""))
    if not clean and builder.first_flag is None and root.parts \
            and isinstance(root.parts[0], _Node):
        root.parts[0].open = True
    body = "".join(_render(p) for p in root.parts) or '<p class="muted">no tensor ops recorded</p>'
    if max_ops is not None and len(trace) > max_ops:
        body += f'<div class="fold">… {len(trace) - max_ops} more ops</div>'
    return body, builder.shown


def _same(shape: str) -> str:
    return shape


def _segments(ops: list[_Op], repeats):
    """The ops in runs: plain lists, and ``(ops, count)`` for a run of ops that ran ``count``
    times of which the trace keeps one (``repeats``: ``[first index, ops, count]``)."""
    starts = {first: (n, count) for first, n, count in repeats}
    plain: list[_Op] = []
    i = 0
    while i < len(ops):
        found = starts.get(ops[i].index)
        if found is None:
            plain.append(ops[i])
            i += 1
            continue
        if plain:
            yield plain
            plain = []
        n, count = found
        yield ops[i:i + n], count
        i += n
    if plain:
        yield plain


def _render(part) -> str:
    if isinstance(part, str):
        return part
    inner = "".join(_render(p) for p in part.parts)
    badge = f' <span class="badge">{part.flagged} flagged</span>' if part.flagged else ""
    if part.loop is not None:
        loop = part.loop
        text = loop.label or f"x {loop.count} iterations"
        if loop.lines and not loop.label:
            first, last = loop.lines
            text += f", line {first}" if first == last else f", lines {first}-{last}"
        vary = (' <span class="muted">(shapes vary: the first iteration is shown)</span>'
                if loop.vary else "")
        return (f'<details class="loop" open><summary><span class="times">{esc(text)}</span>'
                f'{vary} <span class="count">{part.ops} op{"s" if part.ops != 1 else ""}</span>'
                f'{badge}</summary>{inner}</details>')
    short = part.path.rpartition(".")[2] if "." in part.path else part.path
    return (f'<details class="mod"{" open" if part.open else ""}><summary>'
            f'<span class="mname">{esc(short or "(no module)")}</span> '
            + (f'<span class="mpath">{esc(part.path)}</span> ' if short != part.path else "") +
            f'<span class="count">{part.ops} op{"s" if part.ops != 1 else ""}</span>{badge}'
            f'</summary>{inner}</details>')
