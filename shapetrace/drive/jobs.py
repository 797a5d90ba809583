"""What to check: targets from the command line or a config file, with their settings.

Shared by the CLI and the pytest plugin. Resolving a job imports the user's file; building and
running it is ``drive.check.check_target``. A job's ``timeout`` (``--timeout``, or ``timeout`` in the
config) bounds its import and its run alike: a target still running then is stopped and becomes
a target error naming where its code was (``drive.deadline``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    """One target spec and how to build and run it (one spec may name several classes)."""

    spec: str
    init: dict | None = None
    inputs: list[str] | None = None
    dims: dict = field(default_factory=dict)
    causal: bool | None = None
    root: Path | None = None
    #: A TARGET to compare with at the same weights (``reference-mismatch``), relative to root.
    reference: str | None = None
    points: float = 1  # the target's worth when graded
    #: Seconds the target may take to import, and again to run (None: no limit).
    timeout: float | None = None
    #: Where the timeout was set, for the message: ``--timeout`` or ``timeout in FILE``.
    timeout_source: str = "--timeout"

    def resolve(self):
        """The ``drive.targets.Target`` objects this spec names (imports the file, within the
        timeout)."""
        from ..base.dims import Dims
        from ..base.errors import TargetError
        from .deadline import TimedOut, deadline, stopped
        from .targets import resolve_targets

        dims = Dims(self.dims)  # bad sizes are a usage error before anything is imported
        _own_imports(self.timeout)
        try:
            with deadline(self.timeout):
                return resolve_targets(self.spec, root=self.root, dims=dims)
        except TimedOut as exc:
            raise TargetError(stopped(exc, "importing it", self.timeout_source)) from None

    def run(self, target, *, fake: bool = False):
        """A ``TargetResult``: the target built and checked, within the timeout."""
        from ..report.results import TargetResult
        from .deadline import TimedOut, deadline, stopped

        _own_imports(self.timeout)
        try:
            with deadline(self.timeout):
                return self._run(target, fake)
        except TimedOut as exc:
            return TargetResult(target.display, exception=exc,
                                error=stopped(exc, "running it", self.timeout_source))

    def _run(self, target, fake: bool):
        from ..base.errors import ShapetraceError
        from ..report.results import TargetResult
        from .check import check_target

        reference = None
        if self.reference is not None and not fake:
            from .reference import resolve_reference

            try:
                reference = resolve_reference(self.reference, root=self.root, like=target.cls)
            except ShapetraceError as exc:
                return TargetResult(target.display, error=f"reference: {exc}", exception=exc)
        dims = self.dims
        own = getattr(target, "own_dims", None)
        if own:  # module-level sizes that could not be set to the probe sizes: run at them
            from ..base.dims import DEFAULT_SIZES, Dims

            probe = Dims(self.dims)
            sized = {k: probe[k] for k in ("B", "T", "S") if k not in own}
            dims = Dims.declared({**sized, "V": DEFAULT_SIZES["V"], **own})
        return check_target(target.cls, init=self.init, inputs=self.inputs, dims=dims,
                            causal=self.causal, fake=fake, target=target.display,
                            reference=reference)


def _own_imports(timeout: float | None) -> None:
    """Import torch and the pipeline before a deadline starts: they are not the target's time,
    and an import cut short would leave torch half-initialised for every later target."""
    if timeout:
        from . import check as _check  # noqa: F401
        from . import reference as _reference


def jobs_from_config(config, *, dims: dict | None = None, causal: bool | None = None,
                     reference: str | None = None, timeout: float | None = None) -> list[Job]:
    """One Job per ``[[tool.shapetrace.targets]]`` entry; ``dims``/``causal``/``reference``
    (``--reference``, relative to the working directory) and ``timeout`` (``--timeout``)
    override all."""
    dims = dims or {}
    return [Job(spec=t.target, init=t.init, inputs=t.inputs,
                dims={**config.dims_for(t), **dims},
                causal=t.causal if causal is None else causal, root=config.root,
                reference=t.reference if reference is None else str(Path(reference).absolute())
                if _is_path(reference) else reference, points=t.points,
                **_timeout(config, t, timeout))
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
