"""How wide text output is, decided in one place for the command line, ``print()`` and the
pytest plugin (rich-free, so that the plugin can measure before it loads a renderer).

``--width`` / ``print(width=)`` when given; else ``COLUMNS`` when set; else the width of the
terminal on stdout, stderr or stdin (also when stdout is piped: ``| less`` in an 80-column
terminal is 80 columns); else 100, for files and CI logs.
"""

from __future__ import annotations

import os

FILE_WIDTH = 100  # no terminal and no COLUMNS: files, CI logs


def terminal_width() -> int | None:
    """``COLUMNS`` when set, else the width of the terminal on stdout, stderr or stdin, else
    None (no terminal)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (1, 2, 0):
        try:
            size = os.get_terminal_size(fd).columns
        except (OSError, ValueError):
            continue
        if size > 0:
            return size
    return None


def default_width() -> int:
    """``terminal_width()``, else 100."""
    return terminal_width() or FILE_WIDTH
