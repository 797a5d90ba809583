"""Plain text for logs: pytest failure messages and report sections, Gradescope output.

No colour and no trailing spaces, at the width the caller says: the pytest plugin passes the
width of the terminal pytest runs in (``COLUMNS`` when set, as for the command line), and files
(Gradescope's output, a report file) are 100 columns.
"""

from __future__ import annotations

import io

from rich.text import Text

from ..base.width import FILE_WIDTH
from .console import make_console
from .findings import target_renderable
from .trace import trace_renderable

WIDTH = FILE_WIDTH


def plain_console(width: int = WIDTH):
    """A colourless console that writes to a string, read back by ``finish_plain``. It does not
    record: a recording console would keep every segment of a 100k-op trace."""
    return make_console(color=False, width=width, file=io.StringIO())


def finish_plain(console) -> str:
    """What a ``plain_console`` wrote, every line without trailing spaces and ending in a
    newline."""
    return "".join(line.rstrip() + "\n" for line in console.file.getvalue().splitlines())


def plain_text(*renderables, width: int = WIDTH) -> str:
    """Renderables (strings print as they are, never wrapped) as plain text, without the final
    newline."""
    console = plain_console(width)
    for r in renderables:
        if isinstance(r, str):
            console.print(Text(r), soft_wrap=True)
        else:
            console.print(r)
    return finish_plain(console).rstrip()


def results_text(results, *, show_trace: bool = True, max_ops: int | None = None,
                 width: int = WIDTH) -> str:
    """Each result as the command line prints it: its findings, and its trace with show_trace."""
    return plain_text(*(target_renderable(r, width=width, show_trace=show_trace, max_ops=max_ops)
                        for r in results), width=width)


def failure_text(results, *, width: int = WIDTH, findings: str | None = None) -> str | None:
    """Why these results fail: one headline, then each failing result's findings (no trace).
    None when none fails. ``findings``: ``results_text(results, show_trace=False)`` at this
    width when the caller has it already."""
    bad = [r for r in results if not r.ok]
    if not bad:
        return None
    setup = [r for r in bad if r.error]
    if setup and len(bad) == 1:
        return f"shapetrace could not run {setup[0].target}: {setup[0].error}"
    errors = [d for r in bad for d in r.diagnostics if d.severity == "error"]
    where = [f"{d.rule} at {d.location}" if d.location else d.rule for d in errors]
    headline = f"shapetrace found {len(errors)} error{'s' if len(errors) != 1 else ''}"
    if where:
        more = f" and {len(where) - 3} more" if len(where) > 3 else ""
        headline += ": " + ", ".join(where[:3]) + more
    if setup:
        headline += f"; could not run {', '.join(r.target for r in setup)}"
    if findings is None or len(bad) != len(results):
        findings = results_text(bad, show_trace=False, width=width)
    return headline + "\n\n" + findings


def failed_traces_text(results, *, max_ops: int | None = None, width: int = WIDTH) -> str:
    """The traces of the failing results, each under its name and probe sizes ("" if none)."""
    parts: list = []
    for r in results:
        if r.trace is None or r.ok:
            continue
        sizes = [f"{k}={v}" for k, v in r.dims.items()]
        parts.append(_packed([f"{r.target}  ", *sizes], width))
        parts.append(trace_renderable(r.trace, width=width, diagnostics=r.diagnostics,
                                      max_ops=max_ops))
    return plain_text(*parts, width=width) if parts else ""


def _packed(words: list[str], width: int) -> str:
    """Words on lines of at most ``width`` columns, broken only between words (one longer than
    the width stands alone on its line, whole)."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(line.rstrip() for line in lines)
