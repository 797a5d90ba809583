"""The one model that renderers, the CLI and the pytest plugin read: diagnostics and reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ._version import __version__

SEVERITIES = ("error", "warning", "info")


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float written as a string ("inf", "-inf", "nan"), so
    that ``json.dumps(..., allow_nan=False)`` accepts it (SPEC section 5: strict JSON)."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


@dataclass
class Diagnostic:
    """One finding: what happened, where, in the user's names, and how to fix it."""

    rule: str
    severity: str
    message: str
    hint: str = ""
    file: str | None = None
    line: int | None = None
    module: str | None = None
    op: str | None = None
    code: str = ""
    #: Rule-specific data for renderers (e.g. a dependency grid); JSON-serialisable.
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_json(self) -> dict[str, Any]:
        out = {
            "rule": self.rule,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
            "file": self.file,
            "line": self.line,
            "module": self.module,
            "op": self.op,
        }
        if self.data:
            out["data"] = strict_json(self.data)
        return out


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
        from ._render import print_report

        print_report(self, console=console, **options)

    def _repr_html_(self) -> str:  # a notebook shows the report as the HTML report does
        from ._render._notebook import report_html

        return report_html(self)
