"""The Python of a README or a notebook, to be run as the code's own calls (``--calls-from``).

A repository often shows how its classes are built and called nowhere but in its README's
code blocks or a notebook's cells. Named with ``--calls-from README.md`` or ``--calls-from
demo.ipynb``, that code runs as a script would: the fenced blocks marked as Python (or
unmarked ones that parse as Python), one after the other; the code cells of a notebook, in
order, without their shell (``!pip ...``) and magic (``%matplotlib``) lines. A block that is
not Python (a shell session, an output shown as text) is left out, so one stray block does not
stop the rest. Pure standard library.
"""

from __future__ import annotations

import ast
import json
import re

#: a fenced code block: its info string, its body
_FENCE = re.compile(r"^(?P<fence>```+|~~~+)[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_PYTHON_INFO = {"python", "py", "python3", "pycon", "ipython", "ipython3", "py3"}
#: what ``--calls-from`` runs: scripts, READMEs and notebooks
CALLS_FROM_SUFFIXES = (".py", ".md", ".markdown", ".ipynb")


def python_of(path: str, text: str) -> str:
    """The Python to run for the file at ``path`` whose content is ``text``: the text itself
    for a ``.py`` file, the code of a Markdown file's blocks or a notebook's cells."""
    lower = path.lower()
    if lower.endswith((".md", ".markdown")):
        return markdown_code(text)
    if lower.endswith(".ipynb"):
        return notebook_code(text)
    return text


def markdown_code(text: str) -> str:
    """The Python blocks of a Markdown text, in order, one after the other."""
    blocks = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip().split()
        language = info[0].lower() if info else ""
        if language and language not in _PYTHON_INFO:
            continue
        body = _without_prompts(match.group("body"))
        if _parses(body):
            blocks.append(body)
    return "\n\n".join(blocks)


def notebook_code(text: str) -> str:
    """The code cells of a notebook (JSON), in order, without shell and magic lines; cells
    that are not Python after that are left out."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return ""
    blocks = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        lines = [line for line in source.splitlines()
                 if not line.lstrip().startswith(("!", "%"))]
        body = "\n".join(lines)
        if body.strip() and _parses(body):
            blocks.append(body)
    return "\n\n".join(blocks)


def _without_prompts(body: str) -> str:
    """A doctest-style session (``>>> x = f()``) as the code it types; other text as is."""
    lines = body.splitlines()
    if not any(line.startswith(">>> ") for line in lines):
        return body
    return "\n".join(line[4:] for line in lines if line.startswith((">>> ", "... ")))


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


__all__ = ["CALLS_FROM_SUFFIXES", "markdown_code", "notebook_code", "python_of"]
