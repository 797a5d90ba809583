"""What to check: targets from the command line or a config file, with their settings.

Shared by the CLI and the pytest plugin. Resolving a job imports the user's file; building and
running it is ``_check.check_target``.
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

    def resolve(self):
        """The ``_targets.Target`` objects this spec names (imports the file)."""
        from ._dims import Dims
        from ._targets import resolve_targets

        dims = Dims(self.dims)  # bad sizes are a usage error before anything is imported
        return resolve_targets(self.spec, root=self.root, dims=dims)

    def run(self, target, *, fake: bool = False):
        from ._check import check_target
        from ._errors import ShapetraceError
        from ._report import TargetResult

        reference = None
        if self.reference is not None and not fake:
            from ._reference import resolve_reference

            try:
                reference = resolve_reference(self.reference, root=self.root, like=target.cls)
            except ShapetraceError as exc:
                return TargetResult(target.display, error=f"reference: {exc}", exception=exc)
        dims = self.dims
        own = getattr(target, "own_dims", None)
        if own:  # module-level sizes that could not be set to the probe sizes: run at them
            from ._dims import DEFAULT_SIZES, Dims

            probe = Dims(self.dims)
            sized = {k: probe[k] for k in ("B", "T", "S") if k not in own}
            dims = Dims.declared({**sized, "V": DEFAULT_SIZES["V"], **own})
        return check_target(target.cls, init=self.init, inputs=self.inputs, dims=dims,
                            causal=self.causal, fake=fake, target=target.display,
                            reference=reference)


def jobs_from_config(config, *, dims: dict | None = None, causal: bool | None = None,
                     reference: str | None = None) -> list[Job]:
    """One Job per ``[[tool.shapetrace.targets]]`` entry; ``dims``/``causal``/``reference``
    (``--reference``, relative to the working directory) override all."""
    dims = dims or {}
    return [Job(spec=t.target, init=t.init, inputs=t.inputs,
                dims={**config.dims_for(t), **dims},
                causal=t.causal if causal is None else causal, root=config.root,
                reference=t.reference if reference is None else str(Path(reference).absolute())
                if _is_path(reference) else reference, points=t.points)
            for t in config.targets]


def _is_path(spec: str) -> bool:
    location = spec.partition("::")[0].strip()
    return location.endswith(".py") or "/" in location
