"""User text is shown, never obeyed: the one place where control characters are escaped.

Strings from the checked code (exception messages, ``ModuleDict`` keys, target and file names)
reach every format. An escape sequence in them (``\\x1b[31m``, an OSC hyperlink
``\\x1b]8;;...\\x07``) would drive the terminal, and a control character makes an SVG ill-formed
XML. Every console shapetrace prints on is a :class:`SafeConsole`: it renders as rich does, then
shows each control character in a text segment escaped (``\\x1b``), so terminal text, plain text,
HTML and SVG all get the same treatment. Newlines and tabs are layout and stay.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.segment import Segment

#: C0 controls but tab and newline, DEL and the C1 controls (``\x9b`` is a one-byte CSI)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_NEWLINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match) -> str:
    char = match.group()
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")


def safe_text(text: str, *, newlines: bool = True) -> str:
    """``text`` with control characters shown escaped (``\\x1b``); with ``newlines=False``
    newlines and tabs too, so the text stays on one line."""
    pattern = _CONTROL if newlines else _CONTROL_OR_NEWLINE
    return pattern.sub(_escape, text) if pattern.search(text) else text


class SafeConsole(Console):
    """A rich console whose output never carries a control character from a renderable's text
    (rich's own styling and cursor codes are control segments, and pass unchanged)."""

    _safe_depth = 0

    def render(self, renderable, options=None):
        if self._safe_depth:  # a nested render: the outermost one escapes, once
            yield from super().render(renderable, options)
            return
        self._safe_depth += 1
        try:
            search = _CONTROL.search
            for segment in super().render(renderable, options):
                if not segment.control and search(segment.text):
                    segment = Segment(safe_text(segment.text), segment.style, segment.control)
                yield segment
        finally:
            self._safe_depth -= 1
