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
import builtins
import json
import re
import textwrap

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
    return "\n\n".join(body for body in _code_cells(text) if body.strip() and _parses(body))


def notebook_cell(text: str, line: int) -> int:
    """The number (from 1, as Jupyter counts code cells) of the code cell that holds ``line`` of
    :func:`notebook_code` of the notebook ``text``."""
    cells = [(number, body) for number, body in enumerate(_code_cells(text), 1)
             if body.strip() and _parses(body)]
    start = 1
    for number, body in cells:
        end = start + body.count("\n") + 1
        if line < end:
            return number
        start = end + 1  # the blank line between two cells
    return cells[-1][0] if cells else 0


def _code_cells(text: str) -> list[str]:
    """Each code cell of a notebook (JSON), in order, without its shell (``!pip``) and magic
    (``%matplotlib``) lines; none for text that is no notebook."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return []
    out = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        out.append("\n".join(_shell_as_pass(line) for line in source.splitlines()))
    return out


def _shell_as_pass(line: str) -> str:
    """A shell (``!pip``) or magic (``%matplotlib``) line as ``pass`` at its indentation (the
    ``except ImportError:`` that installs a package keeps a body), any other line as is."""
    stripped = line.lstrip()
    return line[:len(line) - len(stripped)] + "pass" if stripped.startswith(("!", "%")) else line


#: how a module written from a notebook's code cells (:func:`notebook_module`) begins
FROM_NOTEBOOK = "# The code cells of "


def notebook_module(text: str, name: str) -> str:
    """A notebook (JSON) as a Python module to import: its code cells in order, each headed by
    ``# code cell N``; the definitions (imports, functions, classes, assignments of constants) at the
    top level, every other statement (a model built and called, a training loop, a plot) under
    ``if __name__ == "__main__":``, so that importing it defines the classes and runs nothing,
    and running it as ``__main__`` (the code's own calls) runs the notebook in order."""
    parts = [f"{FROM_NOTEBOOK}{name}, written by shapetrace: definitions at the top level, "
             f"the rest of each cell under if __name__ == \"__main__\"."]
    defined: set[str] = set(dir(builtins))
    for number, body in enumerate(_code_cells(text)):
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError):
            continue
        lines = body.splitlines()
        out, run = [f"# code cell {number + 1}"], []
        for stmt in tree.body:
            first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            code = "\n".join(lines[first - 1:stmt.end_lineno])
            if not _defines(stmt, defined):
                run.append(code)
                continue
            if run:
                out.append(_main_block(run))
                run = []
            out.append(code)
        parts.append("\n".join(out + ([_main_block(run)] if run else [])))
    return "\n\n".join(parts) + "\n"


def _main_block(statements: list[str]) -> str:
    return 'if __name__ == "__main__":\n' + textwrap.indent("\n".join(statements), "    ")


#: calls a notebook's constants may make when the module is imported: no side effect, cheap
_CHEAP_CALLS = {"int", "float", "str", "bool", "len", "min", "max", "round", "abs", "tuple", "list",
                "dict", "range", "torch.device", "torch.cuda.is_available",
                "torch.backends.mps.is_available"}


def _defines(stmt: ast.stmt, defined: set[str]) -> bool:
    """Whether ``stmt`` only defines (an import, a function, a class, a constant made from
    names defined before it), adding what it defines to ``defined``."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        defined.update((a.asname or a.name).partition(".")[0] for a in stmt.names)
        return True
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        defined.add(stmt.name)
        return True
    if isinstance(stmt, ast.Try) and not stmt.finalbody:  # ``try: import x`` / ``except ImportError:``
        inner = set(defined)
        blocks = [stmt.body, stmt.orelse, *(handler.body for handler in stmt.handlers)]
        if all(isinstance(s, ast.Pass) or _defines(s, inner) for block in blocks for s in block):
            defined |= inner
            return True
        return False
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not all(isinstance(t, ast.Name) for t in targets) or not _cheap(stmt.value, defined):
            return False
        defined.update(t.id for t in targets)
        return True
    return False


def _cheap(node: ast.expr, defined: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _dotted(sub.func) not in _CHEAP_CALLS:
            return False
        if isinstance(sub, ast.Name) and sub.id not in defined:
            return False
        if isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom,
                            ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
    return True


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


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


__all__ = ["CALLS_FROM_SUFFIXES", "markdown_code", "notebook_code", "notebook_module", "python_of"]
