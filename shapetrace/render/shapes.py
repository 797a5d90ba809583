"""Colours: every dimension name has its own, so a jumbled axis stands out in a column of shapes."""

from __future__ import annotations

import re

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


def shape_pieces(shape: str) -> tuple[tuple[str, str], ...]:
    """``(B, H, T, d)`` as (text, style) pieces: each name in its own colour, punctuation dim.

    Unstyled stretches (the space after a comma) are pieces with the style ``""``.
    """
    pieces = []
    for token in _TOKEN.findall(shape):
        if token[0].isalnum() or token[0] == "_":
            pieces.append((token, dim_style(token)))
        else:
            pieces.append((token, "dim" if token in "(),*" else ""))
    return tuple(pieces)


def shape_text(shape: str) -> Text:
    """``(B, H, T, d)`` with each name in its own colour."""
    text = Text()
    for token, style in shape_pieces(shape):
        text.append(token, style=style)
    return text
