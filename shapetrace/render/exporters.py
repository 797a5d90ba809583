"""Report formats: the one table that the command line and the pytest plugin both read.

A format is one entry in ``EXPORTERS``: its name (``--format NAME``), the file suffixes that
select it (``--output report.svg``, ``--shapetrace-report=report.svg``), whether it is painted in
colour, and how a console that recorded the painting becomes the file's text (``finish``; JSON is
not painted). Adding a format is adding an entry.

Two ways to use an exporter:

* ``exporter.export(report)``: a whole ``Report`` as the file's text (the command line);
* ``exporter.entry(result, test=nodeid)`` where a result is made (a pytest-xdist worker), then
  ``exporter.document(entries)`` where the file is written (the controller). An entry is plain
  JSON-able data: the result's JSON report with a ``test`` key, and for a painted format the
  result painted once in colour (ANSI), which the document repaints in the format. The document
  has a title, a "N checked: X failed, Y passed" line and a heading for each entry.

HTML is built from data rather than painted (``html``): its entries carry ``extras`` instead of
a painting, and ``export`` makes entries and the same page the plugin writes.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from .console import make_console
from .findings import report_renderable, target_renderable
from .html import heading as _heading
from .safe import SafeConsole
from .text import WIDTH, finish_plain, plain_console

TITLE = "shapetrace report"
_PAINTED = "_painted"  # an entry's key for its ANSI painting; keys starting "_" stay out of JSON
_EXTRAS = "_html"  # an entry's key for its exporter's extras


class UnknownFormat(ValueError):
    """A format name or file suffix that no exporter has; the message lists those there are."""


def _json_text(data) -> str:
    """Strict JSON: non-finite floats are strings (``to_json`` writes them so); a NaN left
    anywhere is a bug, and raises here instead of writing ``NaN``."""
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def _json_page(exporter: Exporter, entries: list[dict]) -> str:
    from .._version import __version__

    targets = [{k: v for k, v in e.items() if not k.startswith("_")} for e in entries]
    return _json_text({"shapetrace": __version__, "targets": targets})


def _summary(entries: list[dict]) -> str:
    failed = sum(1 for e in entries if not e["ok"])
    return (f"{len(entries)} checked: {failed} failed, {len(entries) - failed} passed"
            if entries else "nothing was checked")


def _painting(entry: dict) -> Text:
    painted = entry.get(_PAINTED)
    if painted is None:
        return Text(entry.get("error") or "")
    return Text.from_ansi(painted.rstrip("\n"))


def _console_page(exporter: Exporter, entries: list[dict]) -> str:
    def draw(console: Console) -> None:
        console.print(Text(TITLE, style="bold"))
        console.print(Text(_summary(entries)))
        for e in entries:
            console.print()
            console.print(Text(_heading(e), style="bold green" if e["ok"] else "bold red"),
                          soft_wrap=True)
            console.print(_painting(e), soft_wrap=True)

    return exporter.record(draw)


def _html_page(exporter: Exporter, entries: list[dict], **options) -> str:
    from .html import html_page

    return html_page(entries, **options)


def _html_finish(console: Console) -> str:
    """Painted renderables (the demo, the rules table) in the report page's frame."""
    from .html import shell

    return shell(console.export_html(inline_styles=True, code_format="{code}"))


def _html_extras(result) -> dict:
    from .html import html_extras

    return html_extras(result)


@dataclass(frozen=True)
class Exporter:
    """One report format. ``finish`` turns a console that recorded the painting into the file's
    text; None for a format that is not painted (JSON). ``page`` makes the document of many
    entries (the pytest plugin's report)."""

    name: str
    suffixes: tuple[str, ...]
    coloured: bool
    finish: Callable[[Console], str] | None
    page: Callable[..., str] = _console_page
    #: Plain data an entry carries for ``page`` beyond the result's JSON, under ``html``
    #: (HTML: source lines, attention weights, the module table), made where the result lives.
    #: An exporter with extras builds ``export``'s text from entries too, so the command line's
    #: page and the plugin's are the same page.
    extras: Callable[[object], dict] | None = None

    @property
    def painted(self) -> bool:
        return self.finish is not None

    def export(self, report, *, width: int = WIDTH, show_trace: bool = True,
               max_ops: int | None = None) -> str:
        """The whole report as this format's text."""
        if not self.painted:
            return _json_text(report.to_json())
        if self.extras is not None:
            return self.page(self, [self.entry(r) for r in report.targets],
                             show_trace=show_trace, max_ops=max_ops)
        return self.paint(report_renderable(report, width=width, show_trace=show_trace,
                                            max_ops=max_ops), width=width)

    def paint(self, *renderables, width: int = WIDTH) -> str:
        """Any renderables (a table, the demo) as this format's text."""
        return self.record(lambda console: [console.print(r) for r in renderables], width=width)

    def record(self, draw: Callable[[Console], object], *, width: int = WIDTH) -> str:
        """What ``draw(console)`` prints, as this format's text."""
        if not self.painted:
            raise UnknownFormat(f"{self.name} is not painted: export a report instead")
        if self.coloured:
            console = make_console(color=True, width=width, file=io.StringIO(), record=True)
        else:
            console = plain_console(width)
        draw(console)
        return self.finish(console)

    def entry(self, result, *, test: str | None = None) -> dict:
        """One result as plain data for ``document``, made where the result lives."""
        entry = result.to_json()
        entry["test"] = test
        if self.extras is not None:
            entry[_EXTRAS] = self.extras(result)
        elif self.painted:
            buffer = io.StringIO()
            console = SafeConsole(file=buffer, force_terminal=True, color_system="truecolor",
                              width=WIDTH, highlight=False, soft_wrap=False)
            console.print(target_renderable(result, width=WIDTH, show_trace=True))
            entry[_PAINTED] = buffer.getvalue()
        return entry

    def document(self, entries: list[dict]) -> str:
        """The file's text for entries made by ``entry``, in their order."""
        return self.page(self, list(entries))


EXPORTERS: dict[str, Exporter] = {e.name: e for e in (
    Exporter("text", (".txt", ".log"), coloured=False, finish=finish_plain),
    Exporter("json", (".json",), coloured=False, finish=None, page=_json_page),
    Exporter("html", (".html", ".htm"), coloured=True, page=_html_page, finish=_html_finish,
             extras=_html_extras),
    Exporter("svg", (".svg",), coloured=True,
             finish=lambda console: console.export_svg(title=TITLE)),
)}


def format_choices() -> str:
    """The formats there are, for error messages: ``text (.txt, .log), json (.json), ...``."""
    return ", ".join(f"{e.name} ({', '.join(e.suffixes)})" for e in EXPORTERS.values())


def exporter_named(name: str) -> Exporter:
    try:
        return EXPORTERS[name]
    except KeyError:
        raise UnknownFormat(f"unknown format {name!r}: use one of {format_choices()}") from None


def exporter_for_path(path, default: str | None = None) -> Exporter:
    """The exporter whose suffix ``path`` has; else ``default``'s, or UnknownFormat."""
    suffix = os.path.splitext(str(path))[1].lower()
    for e in EXPORTERS.values():
        if suffix in e.suffixes:
            return e
    if default is not None:
        return EXPORTERS[default]
    said = f"the suffix {suffix!r}" if suffix else "a file name without a suffix"
    raise UnknownFormat(f"cannot tell the report format from {said}: use one of "
                        f"{format_choices()}")
