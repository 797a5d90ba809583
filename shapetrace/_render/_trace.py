"""The trace as text: one line per op, grouped under a header whenever the module changes.

A training loop records 100k ops and more, so this is the one renderer that has to be fast.
Lines are not built as rich ``Text`` objects: each is a list of (text, style) pieces that
``TraceLines`` hands to rich as the segments ``Text`` would have rendered for it (a line too wide
for the console, which rich must wrap, still goes through ``Text``). Symbolic shapes are asked of
the trace once per tensor layout and split into coloured pieces once per distinct shape.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from ._shapes import SEVERITY_STYLES, shape_pieces

_SOURCE_COLUMN = 56  # the source starts here when the shapes leave room for it


def trace_renderable(trace, *, width: int = 100, diagnostics=None, max_ops: int | None = None,
                     fold: bool = True) -> "TraceLines":
    """One line per op, grouped under a header whenever the module changes.

    With ``fold``, consecutive repeats of a block (``blocks.1`` ... ``blocks.95`` running the same
    ops at the same lines with the same shapes as ``blocks.0``) print once, then one line.
    """
    from .._ops import display_name

    diagnostics = trace.diagnostics if diagnostics is None else diagnostics
    flagged: dict[int, str] = {}
    for d in diagnostics:
        idx = d.data.get("index")
        if idx is not None and (idx not in flagged or d.severity == "error"):
            flagged[idx] = d.severity
    records = trace.records if max_ops is None else trace.records[:max_ops]
    shapes = _Shapes(trace)
    names: dict[tuple[str, str], str] = {}  # (op, source) -> display name
    lines: list = []
    current = None
    items = _folded(records, flagged, shapes) if fold else (("op", r) for r in records)
    for kind, item in items:
        if kind == "fold":
            first, last, count = item
            current = None
            lines.append(Text(f"  … {first} to {last} repeat the ops above ({count} blocks)",
                              style="dim"))
            continue
        rec = item
        if rec.module != current:
            current = rec.module
            header = [("  ", ""), (current or "(no module)", "bold")]
            if rec.file:
                header.append((f"  {rec.file}", "dim"))
            lines.append(_line(header))
        source = rec.source or ""
        name = names.get((rec.op, source))
        if name is None:
            name = names[rec.op, source] = display_name(rec.op, source)
        lines.append(_op_line(rec, name, source, flagged.get(rec.index), width, shapes))
    if max_ops is not None and len(trace.records) > max_ops:
        lines.append(Text(f"  … {len(trace.records) - max_ops} more ops", style="dim"))
    if not lines:
        lines.append(Text("  (no tensor ops recorded)", style="dim"))
    return TraceLines(lines)


class TraceLines:
    """Lines of (text, style) pieces (or ``Text``), rendered by rich as one block."""

    def __init__(self, lines: list):
        self.lines = lines  # each: (pieces, cell length) or a Text

    def __rich_console__(self, console, options):
        null = Style.null()
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
            pieces, text, cells = line
            if cells > max_width:  # rich wraps it, as it would the Text
                yield _as_text(pieces)
                continue
            if plain:
                yield Segment(text + "\n")
                continue
            for text, style in pieces:
                if not style:
                    yield Segment(text, null)
                    continue
                parsed = styles.get(style)
                if parsed is None:
                    parsed = styles[style] = console.get_style(style, default=null)
                yield Segment(text, parsed)
            yield newline


def _line(pieces: list[tuple[str, str]]) -> tuple[list, str, int]:
    """(pieces, plain text, cell length), the pieces as ``Text`` renders them: unstyled runs
    merged, empty pieces dropped."""
    merged: list[tuple[str, str]] = []
    for text, style in pieces:
        if not text:
            continue
        if not style and merged and not merged[-1][1]:
            merged[-1] = (merged[-1][0] + text, "")
        else:
            merged.append((text, style))
    plain = "".join(text for text, _ in merged)
    return merged, plain, cell_len(plain)


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


def _op_line(rec, name: str, source: str, severity, width: int, shapes: _Shapes) -> tuple:
    if severity:
        pieces = [("✗ " if severity == "error" else "! ", SEVERITY_STYLES[severity])]
    else:
        pieces = [("  ", "")]
    pieces.append((f"{rec.line or '':>4} ", "dim"))
    pieces.append((f"{_ellipsize(name, 19):<19} ", "bold" if not rec.error else "bold red"))
    for i, meta in enumerate(_shown_inputs(rec)):
        if i:
            pieces.append((", ", "dim"))
        pieces.extend(shapes.pieces(meta))
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
                pieces.extend(shapes.pieces(meta))
            if len(outs) > 3:
                pieces.append((", …", "dim"))
    cells = cell_len("".join(text for text, _ in pieces))
    room = width - cells - 3
    if source and room > 8:
        pad = max(1, _SOURCE_COLUMN - cells) if cells < _SOURCE_COLUMN and room > 40 else 2
        pieces.append((" " * pad, ""))
        pieces.append((_ellipsize(source, width - cells - pad - 1), "italic dim"))
    return _line(pieces)


_BLOCK = re.compile(r"^(.*?\.)(\d+)(?=\.|$)")  # "GPT.blocks.3.attn" -> "GPT.blocks.", "3"


def _folded(records, flagged, shapes: _Shapes):
    """("op", record) items, with runs of identical numbered blocks as one ("fold", ...)."""
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
        yield from (("op", r) for r in recs)
        sig = signature(family, index, recs)
        j = i + 1
        while sig is not None and j < len(segments) and segments[j][0] == family \
                and signature(*segments[j]) == sig:
            j += 1
        if j - i > 2:  # fold only when it saves lines: two or more repeats
            yield "fold", (f"{family}{segments[i + 1][1]}", f"{family}{segments[j - 1][1]}", j - i - 1)
            i = j
        else:
            i += 1
