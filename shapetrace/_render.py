"""Terminal, HTML and SVG rendering with rich. The only module that imports rich.

Every dimension name has its own colour, so a jumbled axis stands out in a column of shapes.
Library code returns renderables; ``print_*`` functions are the thin printing layer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, Group
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

DIM_STYLES = {
    "B": "bold blue", "T": "bold green", "S": "bold bright_green", "H": "bold magenta",
    "d": "bold yellow", "C": "bold cyan", "V": "bold red", "L": "bold bright_blue",
}
_EXTRA_STYLES = ["bold bright_magenta", "bold bright_cyan", "bold bright_yellow", "bold bright_red"]
SEVERITY_STYLES = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|.", re.S)


def dim_style(name: str) -> str:
    if name in DIM_STYLES:
        return DIM_STYLES[name]
    if name.isdigit():
        return "dim"
    return _EXTRA_STYLES[sum(map(ord, name)) % len(_EXTRA_STYLES)]


def shape_text(shape: str) -> Text:
    """``(B, H, T, d)`` with each name in its own colour."""
    text = Text()
    for token in _TOKEN.findall(shape):
        if token[0].isalnum() or token[0] == "_":
            text.append(token, style=dim_style(token))
        else:
            text.append(token, style="dim" if token in "(),*" else "")
    return text


def _ellipsize(s: str, width: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= width else s[: max(width - 1, 0)] + "…"


def _shown_inputs(rec) -> list:
    """The operands worth showing: the first, and any computed inside the trace."""
    shown = [m for i, m in enumerate(rec.inputs) if i == 0 or m.src is not None]
    return shown[:3]


def trace_renderable(trace, *, width: int = 100, diagnostics=None, max_ops: int | None = None,
                     fold: bool = True):
    """One line per op, grouped under a header whenever the module changes.

    With ``fold``, consecutive repeats of a block (``blocks.1`` ... ``blocks.95`` running the same
    ops at the same lines with the same shapes as ``blocks.0``) print once, then one line.
    """
    diagnostics = trace.diagnostics if diagnostics is None else diagnostics
    flagged: dict[int, str] = {}
    for d in diagnostics:
        idx = d.data.get("index")
        if idx is not None and (idx not in flagged or d.severity == "error"):
            flagged[idx] = d.severity
    records = trace.records if max_ops is None else trace.records[:max_ops]
    lines: list = []
    current = None
    for kind, item in _folded(trace, records, flagged) if fold else (("op", r) for r in records):
        if kind == "fold":
            first, last, count = item
            current = None
            lines.append(Text(f"  … {first} to {last} repeat the ops above ({count} blocks)",
                              style="dim"))
            continue
        rec = item
        if rec.module != current:
            current = rec.module
            header = Text("  ")
            header.append(current or "(no module)", style="bold")
            if rec.file:
                header.append(f"  {rec.file}", style="dim")
            lines.append(header)
        lines.append(_op_line(trace, rec, flagged.get(rec.index), width))
    if max_ops is not None and len(trace.records) > max_ops:
        lines.append(Text(f"  … {len(trace.records) - max_ops} more ops", style="dim"))
    if not lines:
        lines.append(Text("  (no tensor ops recorded)", style="dim"))
    return Group(*lines)


_BLOCK = re.compile(r"^(.*?\.)(\d+)(?=\.|$)")  # "GPT.blocks.3.attn" -> "GPT.blocks.", "3"


def _folded(trace, records, flagged):
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
                      tuple(trace.shape_of(m) for m in r.inputs),
                      tuple(trace.shape_of(m) for m in r.outputs)) for r in recs)

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


def _op_line(trace, rec, severity, width: int) -> Text:
    line = Text()
    if severity:
        line.append("✗ " if severity == "error" else "! ", style=SEVERITY_STYLES[severity])
    else:
        line.append("  ")
    line.append(f"{rec.line or '':>4} ", style="dim")
    line.append(f"{_ellipsize(rec.op, 19):<19} ", style="bold" if not rec.error else "bold red")
    shapes = Text()
    for i, meta in enumerate(_shown_inputs(rec)):
        if i:
            shapes.append(", ", style="dim")
        shapes.append_text(shape_text(trace.shape_of(meta)))
    shapes.append(" → ", style="dim")
    if rec.error:
        shapes.append("raised " + rec.error[0], style="red")
    else:
        outs = rec.outputs
        distinct = {trace.shape_of(m) for m in outs}
        if len(outs) > 1 and len(distinct) == 1:
            shapes.append(f"{len(outs)} × ", style="dim")
            shapes.append_text(shape_text(trace.shape_of(outs[0])))
        else:
            for i, meta in enumerate(outs[:3]):
                if i:
                    shapes.append(", ", style="dim")
                shapes.append_text(shape_text(trace.shape_of(meta)))
            if len(outs) > 3:
                shapes.append(", …", style="dim")
    line.append_text(shapes)
    room = width - line.cell_len - 3
    source = rec.source
    if source and room > 8:
        pad = max(1, 56 - line.cell_len) if line.cell_len < 56 and room > 40 else 2
        line.append(" " * pad)
        line.append(_ellipsize(source, width - line.cell_len - 1), style="italic dim")
    return line


def diagnostic_renderable(d):
    header = Text()
    header.append(f"{d.severity}", style=SEVERITY_STYLES.get(d.severity, ""))
    header.append(f" {d.rule}", style="bold")
    if d.code:
        header.append(f" [{d.code}]", style="dim")
    if d.location:
        header.append("  ")
        header.append(d.location, style="underline")
    if d.module:
        header.append(f"  in {d.module}", style="dim")
    parts = [header, Padding(_message_text(d.message), (0, 0, 0, 4), expand=False)]
    if d.hint:
        hint = Text("hint: ", style="green")
        hint.append(d.hint)
        parts.append(Padding(hint, (0, 0, 0, 4), expand=False))
    grid = d.data.get("grid_text") if d.data else None
    if grid:
        parts.append(Padding(_grid_text(grid), (0, 0, 0, 6), expand=False))
    return Group(*parts)


_GRID_STYLES = {"■": "green", "✗": "bold red", "·": "dim"}


def _grid_text(grid: str) -> Text:
    """The dependency grid with used cells green and leaking cells red."""
    text = Text()
    for ch in grid:
        text.append(ch, style=_GRID_STYLES.get(ch, ""))
    return text


_SHAPE_IN_TEXT = re.compile(r"\((?:[A-Za-z0-9_*]+, )*[A-Za-z0-9_*]+,?\)")


def _message_text(message: str) -> Text:
    """Colour the parenthesised shapes inside a message; code in backticks stays as written."""
    text = Text()
    for i, chunk in enumerate(message.split("`")):
        if i % 2:  # inside backticks: the user's code
            text.append(f"`{chunk}`", style="italic")
            continue
        pos = 0
        for m in _SHAPE_IN_TEXT.finditer(chunk):
            text.append(chunk[pos:m.start()])
            text.append_text(shape_text(m.group(0)))
            pos = m.end()
        text.append(chunk[pos:])
    return text


def summary_text(diagnostics: Iterable, error: str | None = None) -> Text:
    diagnostics = list(diagnostics)
    if error:
        return Text(f"✗ could not run: {error}", style="bold red")
    counts = {s: sum(1 for d in diagnostics if d.severity == s) for s in ("error", "warning", "info")}
    if not diagnostics:
        return Text("✓ no problems found", style="bold green")
    parts = [f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    style = "bold red" if counts["error"] else "bold yellow"
    mark = "✗" if counts["error"] else "!"
    return Text(f"{mark} " + ", ".join(parts), style=style)


def target_renderable(result, *, width: int = 100, show_trace: bool = True, max_ops=None):
    parts = []
    title = Text()
    title.append(result.target, style="bold")
    if result.dims and result.error is None:
        title.append("   ")
        for i, (name, size) in enumerate(result.dims.items()):
            if i:
                title.append(" ")
            title.append(name, style=dim_style(name))
            title.append(f"={size}", style="dim")
    parts.append(Rule(title, align="left", style="dim"))
    if show_trace and result.trace is not None:
        parts.append(trace_renderable(result.trace, width=width, diagnostics=result.diagnostics,
                                      max_ops=max_ops))
        parts.append(Text(""))
    for d in result.diagnostics:
        parts.append(Padding(diagnostic_renderable(d), (0, 0, 0, 2), expand=False))
    if result.skipped and result.error is None:
        skipped = Text(f"skipped (no values under --fake): {', '.join(result.skipped)}", style="dim")
        parts.append(Padding(skipped, (0, 0, 0, 2), expand=False))
    for note in result.notes:
        parts.append(Padding(Text(f"note: {note}", style="dim"), (0, 0, 0, 2), expand=False))
    parts.append(Padding(summary_text(result.diagnostics, result.error), (0, 0, 1, 2), expand=False))
    return Group(*parts)


def report_renderable(report, **options):
    return Group(*(target_renderable(t, **options) for t in report.targets))


def make_console(*, color: bool | None = None, width: int | None = None, file=None,
                 record: bool = False) -> Console:
    kwargs = {"highlight": False, "soft_wrap": False, "record": record}
    if file is not None:
        kwargs["file"] = file
    if color is False:
        kwargs["no_color"] = True
        kwargs["color_system"] = None
    elif color is True:
        kwargs["force_terminal"] = True
    if width is not None:
        kwargs["width"] = width
    return Console(**kwargs)


def print_trace(trace, console=None, **options) -> None:
    console = console or make_console()
    options.setdefault("width", console.width)
    console.print(trace_renderable(trace, **options))
    for d in trace.diagnostics:
        console.print(Padding(diagnostic_renderable(d), (0, 0, 0, 2), expand=False))


def print_report(report, console=None, **options) -> None:
    console = console or make_console()
    options.setdefault("width", console.width)
    console.print(report_renderable(report, **options))


def export(report, fmt: str, *, width: int = 100, title: str = "shapetrace report") -> str:
    """The report as ``html`` or ``svg``, from the same rendering as the terminal."""
    import io

    console = make_console(color=True, width=width, file=io.StringIO(), record=True)
    console.print(report_renderable(report, width=width))
    if fmt == "html":
        return console.export_html(inline_styles=True)
    if fmt == "svg":
        return console.export_svg(title=title)
    if fmt == "text":
        return console.export_text()
    raise ValueError(fmt)
