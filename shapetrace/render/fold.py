"""What a long trace prints as one line or one block: repeated layers, library calls, loops.

The trace is a list of records; this module turns it into a list of nodes that the renderer
(``report.trace``) prints, in three passes:

1. **Repeated blocks**: ``blocks.1`` ... ``blocks.95`` running the same ops at the same lines
   with the same shapes as ``blocks.0`` print once, then a :class:`Fold` line.
2. **Library calls**: an optimizer step (the spans ``record.spans`` noted while recording) and a
   layer's parameter initialisation (``nn.Linear(4, 8)``: ``torch.empty`` and ``nn.init`` ops
   at the user's one line, run by library code) become one :class:`Call` line each.
3. **Loops**: the same ops at the same lines, over and over, become one :class:`Loop` block
   with its count (``x 8 iterations``); loops inside loops nest. Shapes may change from one
   iteration to the next (``x[:t + 1]``): the block then says so and shows the first.

A record with a finding never disappears: findings and errors are part of what must repeat,
so an iteration that differs (the one that raised) is shown on its own.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

#: Ops a layer's constructor runs to make and fill its parameters.
_ALLOCATES = frozenset({"torch.empty", "torch.zeros", "torch.ones", "torch.empty_like",
                        "torch.zeros_like", "torch.ones_like", "torch.full", "torch.tensor",
                        "Tensor.new_empty", "Tensor.new_zeros", "Tensor.new_ones"})
_MAX_PERIOD = 4096  # the longest loop body looked for, in nodes
_CANDIDATES = 16  # how many next occurrences of a node are tried as the period of a loop


@dataclass
class Op:
    rec: object


@dataclass
class Fold:
    """``first`` to ``last`` repeat the block above (``count`` blocks)."""

    first: str
    last: str
    count: int


@dataclass
class Call:
    """Records run by one library call at one line of the user's code."""

    label: str  # "AdamW.step", "nn.init"
    recs: list


@dataclass
class Loop:
    body: list
    count: int
    vary: bool = False  # whether shapes change from one iteration to the next
    lines: tuple = field(default=())  # (first, last) source line of the body
    label: str = ""  # a step of a training loop: its header ("x 999 steps, 2 to 1000")


def fold(records, flagged: dict, shapes, spans=(), *, blocks: bool = True,
         loops: bool = True, steps=()) -> list:
    """The nodes to print for ``records`` (see the module's docstring). ``steps``: the steps
    a training loop's trace kept (``record.steps.StepRun``), each one block under its count."""
    if steps:
        return _steps(records, flagged, shapes, spans, steps, blocks=blocks, loops=loops)
    nodes = list(_blocks(records, flagged, shapes)) if blocks else [Op(r) for r in records]
    nodes = _calls(nodes, flagged, spans)
    if loops:
        nodes = _Loops(flagged, shapes).fold(nodes)
    return nodes


@dataclass(frozen=True)
class StepHeader:
    """A kept step as the HTML report's data carries it (``record.steps.StepRun``'s fields)."""

    start: int
    end: int
    first: int
    count: int
    last: int
    rerun: bool = False


def step_label(run) -> str:
    """The header of a kept step: ``step 1``, ``x 999 steps, 2 to 1000``."""
    if run.rerun:
        return f"step {run.first}, its forward run again to find where it went wrong"
    if run.count == 1:
        return f"step {run.first}"
    return f"x {run.count} steps, {run.first} to {run.last}"


def _steps(records, flagged, shapes, spans, steps, **options) -> list:
    """The records before the first step as they are, then each kept step as a Loop."""
    nodes: list = []
    i, n = 0, len(records)
    for run in sorted(steps, key=lambda run: run.start):
        j = i
        while j < n and records[j].index < run.start:
            j += 1
        if j > i:
            nodes.extend(fold(records[i:j], flagged, shapes, spans, **options))
        k = j
        while k < n and records[k].index < run.end:
            k += 1
        if k > j:
            inner = fold(records[j:k], flagged, shapes, spans, **options)
            nodes.append(Loop(inner, run.count, False, _lines(inner), step_label(run)))
        i = k
    if i < n:
        nodes.extend(fold(records[i:], flagged, shapes, spans, **options))
    return nodes


# --- 1. repeated blocks ------------------------------------------------------------------------

_BLOCK = re.compile(r"^(.*?\.)(\d+)(?=\.|$)")  # "GPT.blocks.3.attn" -> "GPT.blocks.", "3"


def _blocks(records, flagged, shapes):
    """Op nodes, with runs of identical numbered blocks as one Fold."""
    segments: list[tuple[str | None, str | None, list]] = []  # (family, index, records)
    for rec in records:
        m = _BLOCK.match(rec.module or "")
        family, index = (m.group(1), m.group(2)) if m else (None, None)
        if segments and segments[-1][0] == family and segments[-1][1] == index:
            segments[-1][2].append(rec)
        else:
            segments.append((family, index, [rec]))

    def signature(family, index, recs):
        if family is None or any(r.index in flagged or r.error for r in recs):
            return None
        prefix = f"{family}{index}"
        return tuple((r.op, r.line, r.module[len(prefix):],
                      tuple(shapes(m) for m in r.inputs),
                      tuple(shapes(m) for m in r.outputs)) for r in recs)

    i = 0
    while i < len(segments):
        family, index, recs = segments[i]
        yield from (Op(r) for r in recs)
        sig = signature(family, index, recs)
        j = i + 1
        while sig is not None and j < len(segments) and segments[j][0] == family \
                and signature(*segments[j]) == sig:
            j += 1
        if j - i > 2:  # fold only when it saves lines: two or more repeats
            yield Fold(f"{family}{segments[i + 1][1]}", f"{family}{segments[j - 1][1]}", j - i - 1)
            i = j
        else:
            i += 1


# --- 2. library calls --------------------------------------------------------------------------

def _calls(nodes: list, flagged: dict, spans) -> list:
    """Optimizer steps and parameter initialisation as one Call node each."""
    starts = {s.start: s for s in spans}
    out: list = []
    i = 0
    while i < len(nodes):
        node = nodes[i]
        span = starts.get(node.rec.index) if isinstance(node, Op) else None
        if span is not None:
            j = i
            while j < len(nodes) and isinstance(nodes[j], Op) and nodes[j].rec.index < span.end:
                j += 1
            recs = [n.rec for n in nodes[i:j]]
            if j - i == span.end - span.start and _quiet(recs, flagged):
                out.append(Call(span.label, recs))
                i = j
                continue
        j = _init_run(nodes, i, flagged)
        if j - i >= 2:
            recs = [n.rec for n in nodes[i:j]]
            label = "nn.init" if any(r.op.startswith("nn.init.") for r in recs) else None
            out.append(Call(label or _callee(recs[0].source) or "library call", recs))
            i = j
            continue
        out.append(node)
        i += 1
    return out


def _quiet(recs, flagged) -> bool:
    """Nothing to show in these records: no finding, no error."""
    return not any(r.index in flagged or r.error for r in recs)


def _init_run(nodes: list, i: int, flagged) -> int:
    """The end of the run of initialisation ops from ``i``: library ops at one line, outside
    any module's forward, making tensors or changing them in place (``nn.Linear(4, 8)``,
    ``opt.zero_grad()``), at least one of them in place."""
    first = nodes[i]
    if not isinstance(first, Op) or not _initialises(first.rec, flagged):
        return i
    site = first.rec.site
    j = i
    seen_init = False
    while j < len(nodes) and isinstance(nodes[j], Op) and nodes[j].rec.site is site \
            and _initialises(nodes[j].rec, flagged):
        seen_init = seen_init or nodes[j].rec.op not in _ALLOCATES
        j += 1
    return j if seen_init else i


def _initialises(rec, flagged) -> bool:
    op = rec.op
    return (rec.internal and not rec.module and rec.index not in flagged and not rec.error
            and (op in _ALLOCATES or op.startswith("nn.init.") or op == "__set__"
                 or (op.endswith("_") and not op.endswith("__"))))


def _callee(source: str) -> str | None:
    """``opt.zero_grad`` for ``opt.zero_grad(set_to_none=False)``, else None."""
    import ast

    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return None
    return ast.unparse(node.func) if isinstance(node, ast.Call) else None


# --- 3. loops ----------------------------------------------------------------------------------

class _Loops:
    """Finds runs of a repeated sequence of nodes, shortest period first, then loops of loops."""

    def __init__(self, flagged: dict, shapes):
        self.flagged = flagged
        self.shapes = shapes
        self.ids: dict = {}  # node key -> a small int

    def key(self, node) -> int:
        if isinstance(node, Op):
            rec = node.rec
            site = rec.site
            k = ("op", rec.op, id(site[0]) if site else None, site[1] if site else None,
                 rec.module, self.flagged.get(rec.index), rec.error[0] if rec.error else None)
        elif isinstance(node, Call):
            site = node.recs[0].site
            k = ("call", node.label, id(site[0]) if site else None, site[1] if site else None)
        elif isinstance(node, Fold):
            k = ("fold", node.first, node.last, node.count)
        else:
            k = ("loop", node.count, tuple(self.key(n) for n in node.body))
        return self.ids.setdefault(k, len(self.ids))

    def shape_key(self, node):
        """What a node's shapes are: iterations whose shape keys differ vary."""
        if isinstance(node, Op):
            rec = node.rec
            return (tuple(self.shapes(m) for m in rec.inputs),
                    tuple(self.shapes(m) for m in rec.outputs))
        if isinstance(node, Call):
            return tuple(self.shape_key(Op(r)) for r in node.recs)
        if isinstance(node, Loop):
            return (node.count, tuple(self.shape_key(n) for n in node.body))
        return None

    def fold(self, nodes: list) -> list:
        while True:
            folded = self._pass(nodes)
            if len(folded) == len(nodes):
                return folded
            nodes = folded

    def _pass(self, nodes: list) -> list:
        keys = [self.key(n) for n in nodes]
        where: dict[int, list[int]] = {}
        for i, k in enumerate(keys):
            where.setdefault(k, []).append(i)
        out: list = []
        i, n = 0, len(nodes)
        while i < n:
            found = self._period(keys, where, i)
            if found is None:
                out.append(nodes[i])
                i += 1
                continue
            p, r = found
            k = _rotation(keys, nodes, i, p, r)
            out.extend(nodes[i:i + k])
            i += k
            out.append(self._loop(nodes[i:i + p * r], p, r))
            i += p * r
        return out

    @staticmethod
    def _period(keys: list, where: dict, i: int):
        """(period, repeats) of the shortest sequence starting at ``i`` that repeats, or None."""
        n = len(keys)
        positions = where[keys[i]]
        start = bisect.bisect_right(positions, i)
        for j in positions[start:start + _CANDIDATES]:
            p = j - i
            if p > _MAX_PERIOD or i + 2 * p > n:
                break
            body = keys[i:j]
            if keys[j:j + p] != body:
                continue
            r = 2
            while keys[i + r * p:i + (r + 1) * p] == body:
                r += 1
            return p, r
        return None

    def _loop(self, nodes: list, p: int, r: int) -> Loop:
        """A loop of ``r`` iterations of ``p`` nodes; when the iterations' shapes repeat with a
        shorter period (an inner loop whose shapes change, run again by an outer one), a loop
        of loops."""
        sigs = [tuple(self.shape_key(n) for n in nodes[k * p:(k + 1) * p]) for k in range(r)]
        body = self.fold(nodes[:p])  # loops inside the body
        lines = _lines(nodes[:p])
        if len(set(sigs)) == 1:
            return Loop(body, r, False, lines)
        for q in range(2, r):
            if r % q == 0 and all(sigs[k] == sigs[k % q] for k in range(q, r)):
                inner = Loop(body, q, len(set(sigs[:q])) > 1, lines)
                return Loop([inner], r // q, False, lines)
        return Loop(body, r, True, lines)


def _rotation(keys: list, nodes: list, i: int, p: int, r: int) -> int:
    """How far to move the start of a loop found at ``i`` so that its body starts at the top of
    the loop: a first iteration that skipped some ops (``opt.zero_grad()`` with no gradients
    yet) makes the repeats start mid-body. The loop may move by ``k`` when the ``k`` nodes after
    it repeat its first ``k``; it moves to the node with the lowest source line."""
    end = i + p * r
    most = 0
    while most < p - 1 and end + most < len(keys) and keys[end + most] == keys[i + most]:
        most += 1
    if not most:
        return 0
    lines = [(_node_lines(nodes[i + k])[:1] or (float("inf"),))[0] or float("inf")
             for k in range(most + 1)]
    return min(range(most + 1), key=lambda k: (lines[k], k))


def _lines(nodes: list) -> tuple:
    """(first, last) source line of the nodes, or () when none has one."""
    found = [line for node in nodes for line in _node_lines(node) if line]
    return (min(found), max(found)) if found else ()


def _node_lines(node) -> tuple:
    if isinstance(node, Op):
        return (node.rec.line,)
    if isinstance(node, Call):
        return (node.recs[0].line,)
    if isinstance(node, Loop):
        return node.lines
    return ()
