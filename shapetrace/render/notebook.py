"""HTML for a notebook's rich display (``Trace._repr_html_``, ``Report._repr_html_``, the
``%%shapetrace`` magic): the HTML report's own page (``EXPORTERS["html"]``), cut to its
stylesheet and body. Everything on the page is scoped under ``.st``, so the notebook around it
keeps its own look."""

from __future__ import annotations

import re

from .exporters import EXPORTERS

_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S | re.I)
_STYLE = re.compile(r"<style>.*?</style>", re.S | re.I)


def _fragment(page: str) -> str:
    found = _BODY.search(page)
    if not found:
        return page
    style = _STYLE.search(page)
    return (style.group(0) if style else "") + found.group(1).strip()


def report_html(report, *, show_trace: bool = True) -> str:
    """The HTML report of ``report``, as a fragment to show in a notebook."""
    return _fragment(EXPORTERS["html"].export(report, show_trace=show_trace))
