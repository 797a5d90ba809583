"""The one model that renderers, the CLI and the pytest plugin read: target results and
reports, made of the Diagnostics of ``base.diagnostics``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._version import __version__
from ..base.diagnostics import (
    SEVERITIES,
    Diagnostic,
    merge_repeats,
    module_span,
    strict_json,
)

__all__ = ["SEVERITIES", "Diagnostic", "Report", "TargetResult", "merge_repeats", "module_span",
           "strict_json"]


@dataclass
class TargetResult:
    """Everything shapetrace found for one target (one module class, or one traced block)."""

    target: str
    dims: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    trace: Any = None  # a shapetrace.Trace, or None when the target could not run
    error: str | None = None
    skipped: list[str] = field(default_factory=list)
    #: Observations that are not findings ("causal in practice", a check that could not run).
    notes: list[str] = field(default_factory=list)
    #: The exception behind ``error``, for ``--debug`` (not part of the JSON report).
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    #: How long the check took, in seconds (shown by the HTML report; not part of the JSON).
    seconds: float | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None and not any(d.severity == "error" for d in self.diagnostics)

    def to_json(self) -> dict[str, Any]:
        out = {
            "target": self.target,
            "ok": self.ok,
            "error": self.error,
            "dims": dict(self.dims),
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "trace": strict_json(self.trace.to_json()) if self.trace is not None else [],
        }
        if self.skipped:
            out["skipped"] = list(self.skipped)
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass
class Report:
    """The result of ``shapetrace.check`` or a CLI run: one entry per target."""

    targets: list[TargetResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.targets)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for t in self.targets for d in t.diagnostics]

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def to_json(self) -> dict[str, Any]:
        return {"shapetrace": __version__, "targets": [t.to_json() for t in self.targets]}

    def print(self, console=None, **options) -> None:
        from ..render.console import print_report

        print_report(self, console=console, **options)

    def _repr_html_(self) -> str:  # a notebook shows the report as the HTML report does
        from ..render.notebook import report_html

        return report_html(self)
