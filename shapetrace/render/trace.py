"""The trace as text: one line per op, grouped under a header whenever the module changes.

A training loop records 100k ops and more, so this is the one renderer that has to be fast.
Lines are not built as rich ``Text`` objects: each is a list of (text, style) pieces that
``TraceLines`` hands to rich as the segments ``Text`` would have rendered for it (a line too wide
for the console, which rich must wrap, still goes through ``Text``). Symbolic shapes are asked of
the trace once per tensor layout and split into coloured pieces once per distinct shape.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from . import fold as _fold
from .shapes import SEVERITY_STYLES, shape_pieces

_SOURCE_COLUMN = 56  # the source starts here when the shapes leave room for it


def trace_renderable(trace, *, width: int = 100, diagnostics=None, max_ops: int | None = None,
                     fold: bool = True) -> "TraceLines":
    """One line per op, grouped under a header whenever the module changes.

    With ``fold`` (``fold``): consecutive repeats of a block (``blocks.1`` ... ``blocks.95``
    running the same ops at the same lines with the same shapes as ``blocks.0``) print once,
    then one line; an optimizer step and a layer's initialisation print as one line each; a
    loop prints its body once under ``x N iterations``.
    """
    diagnostics = trace.diagnostics if diagnostics is None else diagnostics
    flagged: dict[int, str] = {}
    for d in diagnostics:
        for idx in (d.record, *d.more_records):
            if idx is not None and (idx not in flagged or d.severity == "error"):
                flagged[idx] = d.severity
    records = trace.records if max_ops is None else trace.records[:max_ops]
    shapes = _Shapes(trace)
    if fold:
        nodes = _fold.fold(records, flagged, shapes, getattr(trace, "spans", ()),
                           steps=getattr(trace, "steps", ()))
    else:
        nodes = [_fold.Op(r) for r in records]
    lines: list = []
    _Writer(lines, flagged, shapes, width).nodes(nodes, "")
    if max_ops is not None and len(trace.records) > max_ops:
        lines.append(Text(f"  … {len(trace.records) - max_ops} more ops", style="dim"))
    if not lines:
        lines.append(Text("  (no tensor ops recorded)", style="dim"))
    return TraceLines(lines)


class _Writer:
    """Appends the lines of folded nodes; ``gutter`` marks the lines inside a loop."""

    def __init__(self, lines: list, flagged: dict, shapes: "_Shapes", width: int):
        self.lines = lines
        self.flagged = flagged
        self.shapes = shapes
        self.width = width
        self.names: dict[tuple[str, str], str] = {}  # (op, source) -> display name
        self.current = None  # the module whose header was printed last

    def nodes(self, nodes: list, gutter: str) -> None:
        for node in nodes:
            if isinstance(node, _fold.Op):
                self.header(node.rec, gutter)
                self.op(node.rec, gutter)
            elif isinstance(node, _fold.Call):
                self.header(node.recs[0], gutter)
                self.call(node, gutter)
            elif isinstance(node, _fold.Fold):
                self.current = None
                self.lines.append(_line([(gutter, "dim"), (
                    f"  … {node.first} to {node.last} repeat the ops above ({node.count} blocks)",
                    "dim")]))
            else:
                self.loop(node, gutter)

    def header(self, rec, gutter: str) -> None:
        if (rec.module, rec.site and rec.site[0].co_filename) == self.current:
            return
        self.current = (rec.module, rec.site and rec.site[0].co_filename)
        header = [(gutter, "dim"), ("  ", ""), (rec.module or "(no module)", "bold")]
        if rec.file:
            header += [BREAK, (f"  {rec.file}", "dim")]
        self.lines.append(_line(header))

    def op(self, rec, gutter: str) -> None:
        source = rec.source or ""
        name = self.names.get((rec.op, source))
        if name is None:
            from ..base.ops import display_name

            name = self.names[rec.op, source] = display_name(rec.op, source)
        self.lines.append(_op_line(rec, name, source, self.flagged.get(rec.index), self.width,
                                   self.shapes, gutter))

    def call(self, node, gutter: str) -> None:
        rec = node.recs[0]
        made: list[str] = []
        for r in node.recs:
            for meta in r.outputs:
                shape = self.shapes(meta)
                if shape not in made:
                    made.append(shape)
        pieces = [(gutter, "dim"), ("  ", ""), (f"{rec.line or '':>4} ", "dim"),
                  (f"{_ellipsize(node.label, 19):<19} ", "bold"), BREAK,
                  (f"{len(node.recs)} ops", "dim")]
        if made:
            pieces.append((" on ", "dim"))
            for i, shape in enumerate(made[:3]):
                if i:
                    pieces.append((", ", "dim"))
                pieces.append(BREAK)
                pieces.extend(_shape_pieces(self.shapes, shape))
            if len(made) > 3:
                pieces.append((f", … ({len(made)} shapes)", "dim"))
        self.lines.append(_with_source(pieces, rec.source or "", self.width))

    def loop(self, node, gutter: str) -> None:
        self.current = None
        text = f"┌ {node.label}" if node.label else f"┌ x {node.count} iterations"
        if node.lines and not node.label:
            first, last = node.lines
            text += f", line {first}" if first == last else f", lines {first}-{last}"
        pieces = [(gutter, "dim"), ("  ", ""), (text, "bold")]
        if node.vary:
            pieces.append(BREAK)
            pieces.append(("  (shapes vary: the first iteration is shown)", "dim"))
        self.lines.append(_line(pieces))
        self.nodes(node.body, gutter + "  │")
        self.current = None


class TraceLines:
    """Lines of (text, style) pieces (or ``Text``), rendered by rich as one block."""

    def __init__(self, lines: list):
        self.lines = lines  # each: (pieces, cell length) or a Text

    def __rich_console__(self, console, options):
        styles: dict[str, Style] = {}
        newline = Segment.line()
        max_width = options.max_width
        # Nothing will ever read the styles of a colourless console that does not record: one
        # segment per line is all it needs (the same text, a tenth of the objects).
        plain = console.color_system is None and not console.record
        for line in self.lines:
            if isinstance(line, Text):
                yield line
                continue
            pieces, text, cells, breaks = line
            if cells > max_width:  # broken between shapes, else rich wraps it as it would Text
                wrapped = _wrapped(pieces, breaks, max_width) if breaks else None
                if wrapped is None:
                    yield _as_text(pieces)
                    continue
                for part in wrapped:
                    yield from self._segments(part, plain, styles, console)
                    yield newline
                continue
            if plain:
                yield Segment(text + "\n")
                continue
            yield from self._segments(pieces, plain, styles, console)
            yield newline

    @staticmethod
    def _segments(pieces, plain: bool, styles: dict, console):
        null = Style.null()
        for text, style in pieces:
            if not style or plain:
                yield Segment(text, null)
                continue
            parsed = styles.get(style)
            if parsed is None:
                parsed = styles[style] = console.get_style(style, default=null)
            yield Segment(text, parsed)


#: A piece that marks where a line too wide for the console may break: between shapes, never
#: inside one, nor inside ``raised RuntimeError``.
BREAK = ("", None)


def _line(pieces: list[tuple[str, str]]) -> tuple[list, str, int, tuple]:
    """(pieces, plain text, cell length, breaks), the pieces as ``Text`` renders them: unstyled
    runs merged, empty pieces dropped; ``breaks`` are the indexes of the pieces that may start
    a continuation line (from ``BREAK`` markers)."""
    merged: list[tuple[str, str]] = []
    breaks: list[int] = []
    for text, style in pieces:
        if style is None:
            if merged and (not breaks or breaks[-1] != len(merged)):
                breaks.append(len(merged))
            continue
        if not text:
            continue
        if not style and merged and not merged[-1][1] and (not breaks or breaks[-1] != len(merged)):
            merged[-1] = (merged[-1][0] + text, "")
        else:
            merged.append((text, style))
    breaks = [b for b in breaks if b < len(merged)]
    plain = "".join(text for text, _ in merged)
    return merged, plain, cell_len(plain), tuple(breaks)


def _wrapped(pieces: list, breaks: tuple, width: int):
    """The pieces as several lines no wider than ``width``, broken only at ``breaks``, the
    continuation lines indented under the first operand; None when a part is too wide even
    alone."""
    groups, start = [], 0
    for b in (*breaks, len(pieces)):
        groups.append(pieces[start:b])
        start = b
    cells = [cell_len("".join(t for t, _ in g)) for g in groups]
    indent = min(cells[0], width // 3)
    lines, current, used = [], list(groups[0]), cells[0]
    for group, size in zip(groups[1:], cells[1:]):
        if used + size <= width:
            current += group
            used += size
            continue
        text, style = group[0]
        stripped = text.lstrip(" ")
        group = ([(stripped, style)] if stripped else []) + list(group[1:])
        size -= len(text) - len(stripped)
        if indent + size > width:
            return None
        lines.append(current)
        current, used = [(" " * indent, "")] + group, indent + size
    lines.append(current)
    return lines


def _as_text(pieces) -> Text:
    text = Text()
    for chunk, style in pieces:
        text.append(chunk, style=style)
    return text


def _ellipsize(s: str, width: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= width else s[: max(width - 1, 0)] + "…"


def _shown_inputs(rec) -> list:
    """The operands worth showing: the first, and any computed inside the trace."""
    shown = [m for i, m in enumerate(rec.inputs) if i == 0 or m.src is not None]
    return shown[:3]


class _Shapes:
    """``trace.shape_of`` and its coloured pieces, asked once per tensor layout.

    A long trace repeats a few layouts many times; this cache lives for one rendering only.
    """

    def __init__(self, trace):
        self._shape_of = trace.shape_of
        self._strings: dict = {}
        self._pieces: dict[str, tuple] = {}

    def __call__(self, meta) -> str:
        try:
            key = (meta.axes, meta.shape)
        except AttributeError:  # metadata without a layout: ask every time
            return self._shape_of(meta)
        shape = self._strings.get(key)
        if shape is None:
            shape = self._strings[key] = self._shape_of(meta)
        return shape

    def pieces(self, meta) -> tuple:
        shape = self(meta)
        pieces = self._pieces.get(shape)
        if pieces is None:
            pieces = self._pieces[shape] = shape_pieces(shape)
        return pieces


def _op_line(rec, name: str, source: str, severity, width: int, shapes: _Shapes,
             gutter: str = "") -> tuple:
    pieces = [(gutter, "dim")]
    if severity:
        pieces.append(("✗ " if severity == "error" else "! ", SEVERITY_STYLES[severity]))
    else:
        pieces.append(("  ", ""))
    pieces.append((f"{rec.line or '':>4} ", "dim"))
    pieces.append((f"{_ellipsize(name, 19):<19} ", "bold" if not rec.error else "bold red"))
    pieces.append(BREAK)
    for i, meta in enumerate(_shown_inputs(rec)):
        if i:
            pieces.append((", ", "dim"))
            pieces.append(BREAK)
        pieces.extend(shapes.pieces(meta))
    pieces.append(BREAK)
    pieces.append((" → ", "dim"))
    if rec.error:
        pieces.append(("raised " + rec.error[0], "red"))
    else:
        outs = rec.outputs
        if len(outs) > 1 and len({shapes(m) for m in outs}) == 1:
            pieces.append((f"{len(outs)} × ", "dim"))
            pieces.extend(shapes.pieces(outs[0]))
        else:
            for i, meta in enumerate(outs[:3]):
                if i:
                    pieces.append((", ", "dim"))
                    pieces.append(BREAK)
                pieces.extend(shapes.pieces(meta))
            if len(outs) > 3:
                pieces.append((", …", "dim"))
    return _with_source(pieces, source, width)


def _with_source(pieces: list, source: str, width: int) -> tuple:
    """The line, with the source text at the source column when there is room for it."""
    cells = cell_len("".join(text for text, _ in pieces))
    room = width - cells - 3
    if source and room > 8:
        pad = max(1, _SOURCE_COLUMN - cells) if cells < _SOURCE_COLUMN and room > 40 else 2
        pieces.append(BREAK)
        pieces.append((" " * pad, ""))
        pieces.append((_ellipsize(source, width - cells - pad - 1), "italic dim"))
    return _line(pieces)


def _shape_pieces(shapes: _Shapes, shape: str) -> tuple:
    pieces = shapes._pieces.get(shape)
    if pieces is None:
        pieces = shapes._pieces[shape] = shape_pieces(shape)
    return pieces
