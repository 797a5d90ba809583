"""Script mode: a file (or a notebook cell) run under the tracer at its own sizes.

The lecture notes' scripts define no ``nn.Module``: they build tensors at the sizes the student
chose (``B, T, C = 4, 8, 2``) and average, project and mask them line by line. Such a file runs
as ``python file.py`` would (as ``__main__``, its directory first on ``sys.path``, ``sys.argv``
naming the file) inside ``shapetrace.trace(dims=...)``; the trace rules then read every op.
Nothing is built at probe sizes, and sizes that happen to be probe primes (a cheatsheet's 7 and 5)
are not read as B and T: names come from ``--dims`` and from the jaxtyping annotations of the
forwards the script calls, numbers elsewhere; the behaviour checks, which need a module to
re-run, do not apply.

A script that cannot run at all (missing file, syntax error, a failed import, ``exit(1)``, an
``input()`` with nothing to read) is a
:class:`TargetResult` with ``error`` set (exit code 2); one that raises while running is an
``op-failed`` finding at the user's line, like a forward that raises (exit code 1).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..base.errors import ShapetraceError, drop_frames
from ..base.source import user_frame
from ..rules.failures import raised_findings


def run_script(path: str | os.PathLike, *, dims=None, display: str | None = None,
               argv: list[str] | None = None):
    """Run the file at ``path`` as ``__main__`` under the tracer; a ``TargetResult``."""
    import runpy

    from ..report.results import TargetResult

    path = Path(path)
    display = display or str(path)
    try:
        source = path.read_text(encoding="utf-8")
        compile(source, str(path), "exec", dont_inherit=True)
    except (OSError, UnicodeDecodeError) as exc:
        return TargetResult(display, error=f"cannot read {display}: {exc}", exception=exc)
    except SyntaxError as exc:
        return TargetResult(display, error=f"{display}:{exc.lineno}: syntax error: {exc.msg}",
                            exception=exc)
    saved_argv, saved_path = sys.argv, sys.path[:]
    sys.argv = [str(path), *(argv or [])]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        return run_traced(lambda: runpy.run_path(str(path), run_name="__main__"), display,
                          dims=dims, what="the script")
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def run_traced(run, display: str, *, dims=None, what: str = "the script"):
    """``run()`` inside ``trace(dims=dims)``, its trace rules, and what it raised: a
    ``TargetResult`` (``error`` set when it could not run at all)."""
    from ..report.results import TargetResult
    from ..report.trace import Trace

    try:
        trace = Trace(dims=dict(dims or {}), rules=True, probe_names=False)
    except ShapetraceError as exc:
        return TargetResult(display, error=str(exc), exception=exc)
    raised = None
    try:
        with trace:
            run()
    except KeyboardInterrupt:
        raise
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return TargetResult(display, error=f"{what} called exit({exc.code})", exception=exc)
    except ImportError as exc:
        return TargetResult(display, error=f"{what} could not import: {str(exc).strip()}",
                            exception=exc)
    except EOFError as exc:
        if str(exc) != "EOF when reading a line":
            raised = exc
        else:  # input() with nothing to read: the run could not go on, no bug of the code's
            site = user_frame(exc)
            where = f" at line {site[1]}" if site else ""
            return TargetResult(display, error=f"{what} asked for input (input(){where}) and "
                                f"none was given: pipe it in, e.g. < answers.txt",
                                exception=exc)
    except BaseException as exc:  # the user's code raised: a finding at its line
        raised = exc
    if raised is not None:
        trace.add(raised_findings(trace.records, raised, trace.diagnostics, what=what,
                                  in_module=False))
        drop_frames(raised)
    elif not trace.records:  # "no problems found" would claim a check that never happened
        return TargetResult(display, error=f"nothing to check: {what} ran no torch tensor op")
    return TargetResult(display, dims=dict(dims or {}), trace=trace)
