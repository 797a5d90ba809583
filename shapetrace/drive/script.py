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

import ast
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ShapetraceError, TargetError, UsageError


@dataclass(frozen=True)
class ScriptTarget:
    """A script to run: the path as the user wrote it and where it is."""

    spec: str
    path: Path
    display: str


@dataclass
class ScriptJob:
    """The command line's job for a script: ``resolve()`` then ``run(target)``, like ``Job``."""

    spec: str
    dims: dict = field(default_factory=dict)
    root: Path | None = None

    def resolve(self) -> list[ScriptTarget]:
        location = self.spec.partition("::")[0].strip()
        base = Path(self.root) if self.root is not None else Path.cwd()
        path = Path(location).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.exists():
            raise UsageError(f"no such file: {location}")
        if path.is_dir() or path.suffix != ".py":
            raise UsageError(f"not a Python file: {location} (a script is a .py file)")
        return [ScriptTarget(self.spec, path.resolve(), location)]

    def run(self, target: ScriptTarget, *, fake: bool = False):
        if fake:
            raise UsageError(f"--fake applies to nn.Module targets; {target.display} runs as a "
                             f"script at its own sizes")
        return run_script(target.path, dims=self.dims, display=target.display)


def defines_classes(path: str | os.PathLike) -> bool:
    """Whether the file defines any class at all (read, not run); True when it cannot be read
    or parsed, so that the module path reports the problem."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return True
    return any(isinstance(node, ast.ClassDef) for node in ast.walk(tree))


def script_jobs(jobs: list, *, force: bool, dims: dict) -> list[tuple]:
    """(job, target) pairs for the command line: a file target (no ``::``) runs as a script when
    ``force`` (``--script``) or when it defines no ``nn.Module`` subclass; everything else
    resolves to module classes as before."""
    out: list[tuple] = []
    for job in jobs:
        spec = job.spec.strip()
        location, sep, _ = spec.partition("::")
        is_file = location.strip().endswith(".py") and not sep
        if force and sep:
            raise UsageError(f"--script runs whole files: {spec} names a class")
        if is_file and (force or not defines_classes(_where(job, location.strip()))):
            script = ScriptJob(spec, dims={**job.dims, **dims}, root=job.root)
            out += [(script, t) for t in script.resolve()]
            continue
        try:
            out += [(job, t) for t in job.resolve()]
        except TargetError as exc:
            if not (is_file and str(exc).startswith("no nn.Module subclasses")):
                raise
            script = ScriptJob(spec, dims={**job.dims, **dims}, root=job.root)
            out += [(script, t) for t in script.resolve()]
    return out


def _where(job, location: str) -> Path:
    path = Path(location).expanduser()
    return path if path.is_absolute() or job.root is None else Path(job.root) / path


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
            from .check import user_frame

            site = user_frame(exc)
            where = f" at line {site[1]}" if site else ""
            return TargetResult(display, error=f"{what} asked for input (input(){where}) and "
                                f"none was given: pipe it in, e.g. < answers.txt",
                                exception=exc)
    except BaseException as exc:  # the user's code raised: a finding at its line
        raised = exc
    result = TargetResult(display, dims=dict(dims or {}), trace=trace)
    diagnostics = list(trace.diagnostics)
    if raised is not None:
        from .check import _drop_frames

        diagnostics.extend(_raised(trace, raised, diagnostics, what))
        _drop_frames(raised)
    result.diagnostics = diagnostics
    return result


def _raised(trace, exc: BaseException, found: list, what: str) -> list:
    """The exception as a finding, unless a trace rule already explained the op that raised."""
    from .check import _exception_diagnostics

    return _exception_diagnostics(trace, exc, found, what=what, in_module=False)
