"""HTML for a notebook's rich display (``Trace._repr_html_``, ``Report._repr_html_``, the
``%%shapetrace`` magic): the HTML report's own page (``EXPORTERS["html"]``), cut to its body."""

from __future__ import annotations

import re

from rich.console import Group
from rich.padding import Padding

from ._exporters import EXPORTERS
from ._findings import diagnostic_renderable, summary_text
from ._trace import trace_renderable

_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S | re.I)


def _fragment(page: str) -> str:
    found = _BODY.search(page)
    return found.group(1).strip() if found else page


def report_html(report) -> str:
    """The HTML report of ``report``, as a fragment to show in a notebook."""
    return _fragment(EXPORTERS["html"].export(report))


def trace_html(trace) -> str:
    """A trace as the HTML report paints a traced block: every op, then the findings."""
    diagnostics = trace.diagnostics
    parts = [trace_renderable(trace, diagnostics=diagnostics)]
    parts += [Padding(diagnostic_renderable(d), (0, 0, 0, 2), expand=False) for d in diagnostics]
    parts.append(Padding(summary_text(diagnostics), (1, 0, 0, 2), expand=False))
    return _fragment(EXPORTERS["html"].paint(Group(*parts)))
