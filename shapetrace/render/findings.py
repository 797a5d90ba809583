"""Findings as rich renderables: diagnostics, one target's result, a whole report, the rules."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Group
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from .shapes import SEVERITY_STYLES, dim_style, shape_text
from .trace import trace_renderable


def diagnostic_renderable(d):
    header = Text()
    header.append(f"{d.severity}", style=SEVERITY_STYLES.get(d.severity, ""))
    header.append(f" {d.rule}", style="bold")
    if d.code:
        header.append(f" [{d.code}]", style="dim")
    if d.location:
        header.append("  ")
        header.append(d.location, style="underline")
        if getattr(d, "used_location", ""):
            header.append(f" (used at {d.used_location})", style="dim")
    where = d.module_span
    if where:
        header.append(f"  in {where}", style="dim")
    if d.count > 1:
        header.append(f" ({d.count} times)", style="dim")
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


def summary_text(diagnostics: Iterable, error: str | None = None,
                 not_checked: Iterable[str] = ()) -> Text:
    """The verdict line. ``not_checked``: checks that failed in shapetrace's own code, never
    said to have found nothing."""
    diagnostics = list(diagnostics)
    if error:
        return Text(f"✗ could not run: {error}", style="bold red")
    unchecked = unchecked_text(not_checked)
    counts = {s: sum(1 for d in diagnostics if d.severity == s) for s in ("error", "warning", "info")}
    if not diagnostics:
        if unchecked:
            return Text(f"! no problems found by the checks that ran; {unchecked}",
                        style="bold yellow")
        return Text("✓ no problems found", style="bold green")
    parts = [f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    style = "bold red" if counts["error"] else "bold yellow"
    mark = "✗" if counts["error"] else "!"
    return Text(f"{mark} " + ", ".join(parts) + (f"; {unchecked}" if unchecked else ""),
                style=style)


def unchecked_text(not_checked: Iterable[str]) -> str:
    """``"batch-leak not checked: internal error in shapetrace"`` for checks that failed in
    shapetrace's own code ("" when none did); the reason is in the target's notes."""
    names = list(not_checked)
    if not names:
        return ""
    return (f"{' and '.join(names)} not checked: internal error in shapetrace (see the note; "
            f"please report it)")


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
    parts.append(Padding(summary_text(result.diagnostics, result.error,
                                      getattr(result, "not_checked", ())),
                         (0, 0, 1, 2), expand=False))
    return Group(*parts)


def report_renderable(report, **options):
    return Group(*(target_renderable(t, **options) for t in report.targets))


def rules_renderable(rules: Iterable) -> Table:
    """The rule registry as a table: code, name, severity, what it catches."""
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("code")
    table.add_column("rule")
    table.add_column("severity")
    table.add_column("what it catches")
    for r in rules:
        summary = Text(r.summary)
        if r.needs_values:
            summary.append(" (needs values: skipped under --fake)", style="dim")
        table.add_row(r.code, r.name, Text(r.severity, style=SEVERITY_STYLES[r.severity]), summary)
    return table
