"""The trace as a tree of modules: one ``<details>`` per module, its ops in order inside.

Built from the trace's JSON (what a pytest-xdist worker sends). A clean trace is collapsed; the
modules down to the first finding are open. Repeated blocks fold as on the terminal
(``_render._fold``): one copy, then a line with the count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..._ops import display_name
from .._fold import Fold, _blocks
from ._text import esc, shape_html


@dataclass
class _Op:
    """A trace entry with the attributes the folding reads."""

    index: int
    op: str
    module: str
    line: int | None
    inputs: tuple
    outputs: tuple
    error: str | None
    item: dict


@dataclass
class _Node:
    path: str
    parts: list = field(default_factory=list)  # _Node, or an op's or a fold's HTML
    ops: int = 0
    flagged: int = 0
    open: bool = False


def _op_html(op: _Op, severity: str | None, ids) -> str:
    item = op.item
    source = item.get("source") or ""
    mark = {"error": "✗", "warning": "!", "info": "i"}.get(severity or "", "")
    name = display_name(op.op, source)
    ins = ", ".join(shape_html(s) for s in op.inputs[:3]) + (", …" if len(op.inputs) > 3 else "")
    outs = op.outputs
    if op.error:
        result = f'<span class="raised">raised {esc(op.error)}</span>'
    elif len(outs) > 1 and len(set(outs)) == 1:
        result = f"{len(outs)} × {shape_html(outs[0])}"
    else:
        result = ", ".join(shape_html(s) for s in outs[:3]) + (", …" if len(outs) > 3 else "")
    finding = ids.finding_of(op.index)
    mark_html = f'<a class="mk" href="#{finding}" title="the finding">{mark}</a>' if finding \
        else f'<span class="mk">{mark}</span>'
    return (f'<div class="op{" " + severity if severity else ""}" id="{ids.op(op.index)}">'
            f'{mark_html}<span class="ln">{op.line or ""}</span>'
            f'<span class="name">{esc(name)}</span>'
            f'<span class="io">{ins} → {result}</span>'
            f'<code class="src">{esc(source)}</code></div>')


def trace_tree(trace: list[dict], flagged: dict[int, str], ids, *, clean: bool,
               max_ops: int | None = None) -> tuple[str, set[int]]:
    """The trace as nested ``<details>``, and the indices of the ops it shows."""
    shown_items = trace if max_ops is None else trace[:max_ops]
    ops = [_Op(i, t["op"], t.get("module") or "", t.get("line"), tuple(t.get("inputs", ())),
               tuple(t.get("outputs", ())), t.get("error"), t) for i, t in enumerate(shown_items)]
    root = _Node("")
    stack = [root]
    shown: set[int] = set()
    first_flag = min(flagged) if flagged else None

    def enter(path: str) -> _Node:
        while len(stack) > 1 and not (path == stack[-1].path
                                      or path.startswith(stack[-1].path + ".")):
            stack.pop()
        top = stack[-1]
        if path and path != top.path:
            rest = path[len(top.path) + 1:] if top.path else path
            for part in rest.split("."):
                node = _Node(f"{top.path}.{part}" if top.path else part)
                top.parts.append(node)
                stack.append(node)
                top = node
        return top

    for node_or_fold in _blocks(ops, flagged, lambda s: s):
        if isinstance(node_or_fold, Fold):
            first, last, count = node_or_fold.first, node_or_fold.last, node_or_fold.count
            node = enter(first.rpartition(".")[0])
            node.parts.append(f'<div class="fold">… {esc(first)} to {esc(last)} repeat the '
                              f'ops above (<b>{count}</b> blocks)</div>')
            continue
        item = node_or_fold.rec
        node = enter(item.module)
        severity = flagged.get(item.index)
        node.parts.append(_op_html(item, severity, ids))
        shown.add(item.index)
        for n in stack:
            n.ops += 1
            if severity:
                n.flagged += 1
            if item.index == first_flag:
                n.open = True
    if not clean and first_flag is None and root.parts and isinstance(root.parts[0], _Node):
        root.parts[0].open = True
    body = "".join(_render(p) for p in root.parts) or '<p class="muted">no tensor ops recorded</p>'
    if max_ops is not None and len(trace) > max_ops:
        body += f'<div class="fold">… {len(trace) - max_ops} more ops</div>'
    return body, shown


def _render(part) -> str:
    if isinstance(part, str):
        return part
    short = part.path.rpartition(".")[2] if "." in part.path else part.path
    badge = f' <span class="badge">{part.flagged} flagged</span>' if part.flagged else ""
    return (f'<details class="mod"{" open" if part.open else ""}><summary>'
            f'<span class="mname">{esc(short or "(no module)")}</span> '
            + (f'<span class="mpath">{esc(part.path)}</span> ' if short != part.path else "") +
            f'<span class="count">{part.ops} op{"s" if part.ops != 1 else ""}</span>{badge}'
            f'</summary>{"".join(_render(p) for p in part.parts)}</details>')
