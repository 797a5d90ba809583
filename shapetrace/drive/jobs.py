"""What to check: targets from the command line or a config file, with their settings.

Shared by the CLI and the pytest plugin. A job is one target spec; ``job.resolve()`` imports
the user's file and gives its targets, ``job.check(target)`` checks one, within the job's
``timeout`` (``--timeout``, or ``timeout`` in the config): a target still importing or running
then is stopped and becomes a target error naming where its code was (``deadline``). Two kinds
share that interface:

- :class:`Job`: module classes, built and checked by ``check.check_target``;
- :class:`ScriptJob`: a file run as a script at its own sizes (``script``): a file that
  defines no ``nn.Module`` subclass, or any file with ``--script`` (:func:`command_line_jobs`).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import NoModuleClasses, ShapetraceError, UsageError


@dataclass
class Job:
    """One target spec and how to build and check it (one spec may name several classes)."""

    spec: str
    init: dict | None = None
    inputs: list[str] | None = None
    dims: dict = field(default_factory=dict)
    causal: bool | None = None
    root: Path | None = None
    #: A TARGET to compare with at the same weights (``reference-mismatch``), relative to root.
    reference: str | None = None
    points: float = 1  # the target's worth when graded
    #: When Gradescope shows the result to the student (None: Gradescope's default).
    visibility: str | None = None
    #: Seconds the target may take to import, and again to run (None: no limit).
    timeout: float | None = None
    #: Where the timeout was set, for the message: ``--timeout`` or ``timeout in FILE``.
    timeout_source: str = "--timeout"
    #: Whether the code's own calls (``owncalls``) are run before anything is guessed.
    own_calls: bool = True
    #: Scripts, beside the file's own ``__main__`` block and its tests, that call its classes.
    calls_from: tuple = ()
    #: Whether a package the file imports and this machine lacks may stand in (``absent``):
    #: a file named on the command line is explored; a course's targets are graded as they run.
    stand_in: bool = False

    def resolve(self):
        """The ``targets.Target`` objects this spec names (imports the file, within the
        timeout)."""
        from ..base.dims import Dims
        from ..base.errors import TargetError
        from .deadline import TimedOut, deadline, stopped
        from .targets import resolve_targets

        dims = Dims(self.dims)  # bad sizes are a usage error before anything is imported
        _own_imports(self.timeout)
        try:
            with deadline(self.timeout):
                return resolve_targets(self.spec, root=self.root, dims=dims,
                                       stand_in=self.stand_in)
        except TimedOut as exc:
            raise TargetError(stopped(exc, "importing it", self.timeout_source)) from None

    def check(self, target, *, fake: bool = False, reuse=None):
        """A ``TargetResult``: the target built and checked, within the timeout. ``reuse``
        (``reuse.Reuse``): checks already made in this run, for code handed in again."""
        from ..report.results import TargetResult
        from .deadline import TimedOut, deadline, stopped

        _own_imports(self.timeout)
        try:
            with deadline(self.timeout):
                result = self._check(target, fake, reuse)
            if result.error and self.init is None:  # what to pass, as one command line
                from .asks import with_command

                result.error = with_command(result.error, result.exception, target.display)
            return result
        except TimedOut as exc:
            return TargetResult(target.display, exception=exc,
                                error=stopped(exc, "running it", self.timeout_source))
        except SystemExit as exc:  # sys.exit() in the constructor or forward: this class's
            return TargetResult(target.display, exception=exc,
                                error=f"the checked code called exit({exc.code}); put script "
                                      f"code under if __name__ == '__main__':")
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - one class's problem is that class's verdict
            return internal_error(target.display, exc, "checking")

    def _check(self, target, fake: bool, reuse=None):
        from ..base.errors import ShapetraceError
        from ..report.results import TargetResult

        reference = None
        if self.reference is not None and not fake:
            from .reference import resolve_reference

            def resolve():
                return resolve_reference(self.reference, root=self.root, like=target.cls)

            try:  # the same solution for every student: found once in a run
                reference = resolve() if reuse is None else reuse.once(
                    ("reference", self.reference, str(self.root), target.cls.__qualname__),
                    resolve)
            except ShapetraceError as exc:
                return TargetResult(target.display, error=f"reference: {exc}", exception=exc)
        from .absent import SKIPPED

        SKIPPED.clear()
        note = None
        if self.own_calls and self.init is None and self.inputs is None and not fake:
            from .replay import checked_by_own_call

            result, note = checked_by_own_call(target, self, reuse, reference)
            if result is not None:
                return result
        result = self._guessed(target, fake, reuse, reference)
        if note:
            result.notes.insert(0, note)
        from .absent import NATIVE, STANDING_VERSION, UNVERSIONED
        from .toplevel import passed_over_note

        if getattr(target, "passed_over", ()):
            result.notes.append(passed_over_note(list(target.passed_over)))

        absent = [n for n in getattr(target, "absent", ()) if not n.startswith(UNVERSIONED)]
        for name in set(getattr(target, "absent", ())) - set(absent):
            result.notes.append(f"its package asks for its own installed version ("
                                f"{name[len(UNVERSIONED):]!r}), not installed here: given "
                                f"{STANDING_VERSION}")
        if absent and not result.error:
            names = " and ".join("a native library not built" if name == NATIVE else repr(name)
                                 for name in absent)
            them = "them" if len(absent) > 1 else "it"
            lacks = " or missing from the version installed" if any("." in n for n in absent
                                                                     if n != NATIVE) else ""
            skipped = ", ".join(f"`{name}` at {site}" for site, name in list(SKIPPED.items())[:3])
            result.notes.append(f"its file imports {names}, not installed here{lacks}: imported "
                                f"without {them} (this class never used {them}" + (
                                    f" but in calls whose results it drops, passed over: {skipped}"
                                    if skipped else "") + ")")
        return result

    def _guessed(self, target, fake: bool, reuse, reference):
        """The target built and fed from what shapetrace infers (or what was declared)."""
        from .check import check_target

        dims = self.dims
        own = getattr(target, "own_dims", None)
        if own:  # module-level sizes that could not be set to the probe sizes: run at them
            from ..base.dims import DEFAULT_SIZES, Dims

            probe = Dims(self.dims)
            sized = {k: probe[k] for k in ("B", "T", "S") if k not in own}
            dims = Dims.declared({**sized, "V": DEFAULT_SIZES["V"], **own})
        return check_target(target.cls, init=self.init, inputs=self.inputs, dims=dims,
                            causal=self.causal, fake=fake, target=target.display,
                            reference=reference, reuse=reuse)


@dataclass(frozen=True)
class ScriptTarget:
    """A script to run: the path as the user wrote it and where it is."""

    spec: str
    path: Path
    display: str


@dataclass
class ScriptJob:
    """A file run as a script, at its own sizes: ``resolve()`` then ``check(target)``, like
    :class:`Job`."""

    spec: str
    dims: dict = field(default_factory=dict)
    root: Path | None = None
    timeout: float | None = None

    def resolve(self) -> list[ScriptTarget]:
        location = self.spec.partition("::")[0].strip()
        path = _located(self.root, location)
        if not path.exists():
            raise UsageError(f"no such file: {location}")
        if path.is_dir() or path.suffix != ".py":
            raise UsageError(f"not a Python file: {location} (a script is a .py file)")
        return [ScriptTarget(self.spec, path.resolve(), location)]

    def check(self, target: ScriptTarget, *, fake: bool = False, reuse=None):
        """A ``TargetResult``: the script run under the tracer, within the timeout."""
        from ..report.results import TargetResult
        from .deadline import TimedOut, deadline, stopped
        from .script import run_script

        if fake:
            raise UsageError(f"--fake applies to nn.Module targets; {target.display} runs as a "
                             f"script at its own sizes")
        try:
            with deadline(self.timeout):
                return run_script(target.path, dims=self.dims, display=target.display)
        except TimedOut as exc:
            return TargetResult(target.display, error=stopped(exc, "running it"), exception=exc)


@dataclass(frozen=True)
class Unresolved:
    """A target spec that could not be imported or found, kept as a target of its own in a run
    of several: checking it reports the error, and every other target still runs."""

    display: str
    error: Exception

    def check(self, target=None, *, fake: bool = False, reuse=None):
        from ..report.results import TargetResult

        return TargetResult(self.display, error=str(self.error), exception=self.error)


def resolved(job, *, alone: bool = False) -> list[tuple]:
    """``(job, target)`` for every target ``job`` names; when it cannot be imported or found
    (shapetrace's own failure included), one ``(Unresolved, None)``: its report says why. A
    usage error (a target string that names no file) is raised instead when ``alone`` (a single
    target on the command line: one line on stderr)."""
    from ..base.errors import ShapetraceError

    try:
        return [(job, target) for target in job.resolve()]
    except ShapetraceError as exc:
        if alone and isinstance(exc, UsageError):
            raise
        return [(Unresolved(job.spec.strip(), exc), None)]
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - shapetrace's own failure, for this target only
        return [(Unresolved(job.spec.strip(), _internal(exc, "importing", job.spec.strip())),
                 None)]


def command_line_jobs(jobs: list[Job], *, script: bool, dims: dict, alone: bool = True) -> list[tuple]:
    """``(job, target)`` pairs for the command line's targets: a file target (no ``::``) runs
    as a script when ``script`` (``--script``) or when it defines no ``nn.Module`` subclass;
    everything else resolves to module classes. A target that cannot be imported or found is
    its own target error (``resolved``), unless it is a usage error in a run of one target
    (``alone``)."""
    out: list[tuple] = []
    for job in jobs:
        spec = job.spec.strip()
        location, sep, _ = spec.partition("::")
        is_file = location.strip().endswith(".py") and not sep
        if script and sep:
            raise UsageError(f"--script runs whole files: {spec} names a class")
        as_script = ScriptJob(spec, dims={**job.dims, **dims}, root=job.root,
                              timeout=job.timeout)
        if is_file and (script or not defines_classes(_located(job.root, location.strip()))):
            out += resolved(as_script, alone=alone)
            continue
        try:
            out += [(job, t) for t in job.resolve()]
        except NoModuleClasses:
            if not is_file:
                raise
            out += resolved(as_script, alone=alone)
        except ShapetraceError as exc:
            if alone and isinstance(exc, UsageError):
                raise  # the one target names nothing to check: one line, no report
            out.append((Unresolved(spec, exc), None))
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - shapetrace's own failure, for this target only
            out.append((Unresolved(spec, _internal(exc, "importing", spec)), None))
    return out


def internal_error(display: str, exc: BaseException, doing: str):
    """A ``TargetResult`` for a failure of shapetrace itself while ``doing`` one target (its
    other targets still run): named as shapetrace's, with the exception kept for ``--debug``."""
    from ..report.results import TargetResult

    error = _internal(exc, doing, display)
    return TargetResult(display, error=str(error), exception=exc)


def _internal(exc: BaseException, doing: str, display: str) -> ShapetraceError:
    from ..base.errors import TargetError, one_line

    text = one_line(exc)
    error = TargetError(f"internal error while {doing} {display}: {type(exc).__name__}"
                        f"{': ' + text[:200] if text else ''} (rerun with --debug for the "
                        f"traceback, and please report it)")
    error.original = exc
    return error


def defines_classes(path: str | os.PathLike) -> bool:
    """Whether the file defines any class at all (read, not run); True when it cannot be read
    or parsed, so that importing it reports the problem."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return True
    return any(isinstance(node, ast.ClassDef) for node in ast.walk(tree))


def _located(root: Path | None, location: str) -> Path:
    path = Path(location).expanduser()
    base = Path(root) if root is not None else Path.cwd()
    return path if path.is_absolute() else base / path


def _own_imports(timeout: float | None) -> None:
    """Import torch and the pipeline before a deadline starts: they are not the target's time,
    and an import cut short would leave torch half-initialised for every later target."""
    if timeout:
        from . import check, reference  # noqa: F401


def jobs_from_config(config, *, dims: dict | None = None, causal: bool | None = None,
                     reference: str | None = None, timeout: float | None = None,
                     own_calls: bool = True, calls_from=()) -> list[Job]:
    """One Job per ``[[tool.shapetrace.targets]]`` entry; ``dims``/``causal``/``reference``
    (``--reference``, relative to the working directory) and ``timeout`` (``--timeout``)
    override all; ``own_calls`` False (``--no-own-calls``) turns the code's own calls off for
    all, and ``calls_from`` (``--calls-from``, absolute paths) adds scripts to each target's."""
    dims = dims or {}
    return [Job(spec=t.target, init=t.init, inputs=t.inputs,
                dims={**config.dims_for(t), **dims},
                causal=t.causal if causal is None else causal, root=config.root,
                reference=t.reference if reference is None else str(Path(reference).absolute())
                if _is_path(reference) else reference, points=t.points,
                visibility=config.visibility_for(t), **_timeout(config, t, timeout),
                own_calls=own_calls and config.own_calls_for(t),
                calls_from=(*config.calls_from_for(t), *calls_from))
            for t in config.targets]


def _timeout(config, target, given: float | None) -> dict:
    """The job's ``timeout`` and where it was set: ``--timeout``, else the config's."""
    if given is not None:
        return {"timeout": given, "timeout_source": "--timeout"}
    seconds = config.timeout_for(target)
    return {"timeout": seconds, "timeout_source": f"timeout in {Path(config.path).name}"}


def _is_path(spec: str) -> bool:
    location = spec.partition("::")[0].strip()
    return location.endswith(".py") or "/" in location
