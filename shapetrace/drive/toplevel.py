"""A file whose own top level fails to run: its definitions, imported statement by statement.

A course script or a research single-file keeps its model classes beside the script that uses
them, at the top level, not under ``if __name__ == "__main__":``: ``model = GPT.from_pretrained(
"gpt2")``, a data loader that reads its shards, ``torch.load("/mnt/e/weights.pth")``. Imported
as it is, the first of those that fails stops the import, and with it every class of the file.
When the file's own top level raised for want of a file or the network (an ``OSError``, not a
statement inside a definition's body; a bug of the code, a missing package or ``sys.exit``
stays the file's error, said as it is), the file is run again one top-level statement at a
time: a statement that raises is passed over and said; the loops and bare calls that run the
script around the model (a training loop, ``print(generate(...))``) are left out, as
:mod:`~shapetrace.drive.modconfig` leaves them out, and so are with-blocks (a log file opened
for writing). A class that needs what a passed-over statement would have made fails on its
own, a target error.
"""

from __future__ import annotations

import ast

from ..base.errors import one_line
from .modconfig import script_statement


def failed_at_top(exc: BaseException, path: str) -> int | None:
    """The line of ``path``'s own top level where ``exc`` was raised (the statement running
    when it was: ``model = Net(...)`` for a failure inside ``Net.__init__``), else None."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def run_piecewise(tree: ast.Module, path: str, namespace: dict) -> list[str]:
    """Run ``tree`` (the file at ``path``) in ``namespace`` one top-level statement at a time,
    leaving out loops, bare calls and with-blocks; ``LINE: Error: message`` for each statement
    that raised and was passed over. An import that fails raises, for the caller to stand in what
    is missing."""
    passed: list[str] = []
    for node in tree.body:
        if script_statement(node) or isinstance(node, (ast.With, ast.AsyncWith)):
            continue  # (a ``with open(log_file, "w")`` of the script: nothing a class needs)
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec", dont_inherit=True)
        try:
            exec(code, namespace)  # noqa: S102 - the user's own file, as import runs it
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - passed over, said
            if isinstance(node, (ast.Import, ast.ImportFrom)) and isinstance(exc, ImportError):
                raise
            passed.append(f"{node.lineno}: {type(exc).__name__}: {one_line(exc)[:100]}")
    return passed


def passed_over_note(passed: list[str]) -> str:
    """The note for a file imported statement by statement (``passed``: ``LINE: Error: ...``
    of each statement passed over)."""
    line, _, why = passed[0].partition(": ")
    more = [p.partition(":")[0] for p in passed[1:]]
    also = f" (and line{'s' if len(more) > 1 else ''} {', '.join(more)}, passed over too)" if more else ""
    return (f"its file's top level failed at line {line} ({why}){also}: its definitions were "
            f"imported statement by statement, its loops, bare calls and with-blocks left out")
