"""Consoles and the thin printing layer: everything else in the package returns renderables.

Width: ``width=`` (``--width``, ``print(width=)``) when given; else ``COLUMNS`` when set; else the
terminal's width when the process has a terminal (also when its output is piped: ``| less`` in
an 80-column terminal is 80 columns); else 100, for files and CI logs.
"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding

from ..base.width import FILE_WIDTH, default_width  # noqa: F401 - the render layer's too
from .findings import diagnostic_renderable, report_renderable
from .safe import SafeConsole
from .trace import trace_renderable


def make_console(*, color: bool | None = None, width: int | None = None, file=None,
                 record: bool = False) -> Console:
    """A console for shapetrace's output: ``color`` None follows the terminal (and NO_COLOR),
    False never colours, True always does. Control characters in user text are shown escaped
    (``safe``)."""
    # never rich's Jupyter mode, which would display every print in a notebook instead of
    # writing it to ``file`` (the HTML report is recorded on such a console)
    kwargs = {"highlight": False, "soft_wrap": False, "record": record, "force_jupyter": False}
    if file is not None:
        kwargs["file"] = file
    if color is False:
        kwargs["no_color"] = True
        kwargs["color_system"] = None
    elif color is True:
        kwargs["force_terminal"] = True
    kwargs["width"] = width if width is not None else default_width()
    return SafeConsole(**kwargs)


def print_trace(trace, console=None, **options) -> None:
    """The trace, then its findings; ``width=`` sets the width (a console given keeps its own
    as the most)."""
    console = console or make_console(width=options.get("width"))
    options.setdefault("width", console.width)
    width = options["width"]
    console.print(trace_renderable(trace, **options), width=width)
    for d in trace.diagnostics:
        console.print(Padding(diagnostic_renderable(d), (0, 0, 0, 2), expand=False), width=width)


def print_report(report, console=None, **options) -> None:
    console = console or make_console(width=options.get("width"))
    options.setdefault("width", console.width)
    console.print(report_renderable(report, **options), width=options["width"])
