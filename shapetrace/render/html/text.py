"""User text as HTML: escaped once, here (control characters shown as ``safe`` shows them),
and shapes in named dims coloured per name, as on the terminal."""

from __future__ import annotations

import html
import re
from functools import lru_cache

from ..findings import _SHAPE_IN_TEXT
from ..safe import safe_text
from ..shapes import shape_pieces


def esc(text) -> str:
    """Any text from the report, safe inside an element or a quoted attribute."""
    return html.escape(safe_text(str(text)), quote=True)


def colour_class(style: str) -> str:
    """The page's class for a terminal style: ``bold blue`` -> ``c-blue``."""
    words = [w for w in style.split() if w != "bold"]
    return f"c-{words[-1]}" if words else ""


@lru_cache(maxsize=4096)
def shape_html(shape: str) -> str:
    """``(B, H, T, d)`` with each name in its terminal colour."""
    out = []
    for token, style in shape_pieces(shape):
        cls = colour_class(style) if style else ""
        out.append(f'<span class="{cls}">{esc(token)}</span>' if cls else esc(token))
    return f'<span class="shape">{"".join(out)}</span>'


def message_html(message: str) -> str:
    """A finding's message: code in backticks as code, shapes coloured."""
    out = []
    for i, chunk in enumerate(message.split("`")):
        if i % 2:
            out.append(f"<code>{esc(chunk)}</code>")
            continue
        pos = 0
        for m in _SHAPE_IN_TEXT.finditer(chunk):
            out.append(esc(chunk[pos:m.start()]))
            out.append(shape_html(m.group(0)))
            pos = m.end()
        out.append(esc(chunk[pos:]))
    return "".join(out)


_PARAGRAPH = re.compile(r"\n\s*\n")


def prose_html(text: str) -> str:
    """A rule's explanation: paragraphs, code in backticks."""
    return "".join(f"<p>{message_html(' '.join(p.split()))}</p>" for p in _PARAGRAPH.split(text)
                   if p.strip())
