"""Consoles and the thin printing layer: everything else in the package returns renderables."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding

from ._safe import SafeConsole

from ._findings import diagnostic_renderable, report_renderable
from ._trace import trace_renderable


def make_console(*, color: bool | None = None, width: int | None = None, file=None,
                 record: bool = False) -> Console:
    """A console for shapetrace's output: ``color`` None follows the terminal (and NO_COLOR),
    False never colours, True always does. Control characters in user text are shown escaped
    (``_safe``)."""
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
    return SafeConsole(**kwargs)


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
