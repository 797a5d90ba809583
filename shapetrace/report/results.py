"""The one model that renderers, the CLI and the pytest plugin read: target results and
reports, made of the Diagnostics of ``base.diagnostics``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._version import __version__
from ..base.diagnostics import (
    SEVERITIES,
    Diagnostic,
    Skip,
    merge_repeats,
    module_span,
    strict_json,
)

__all__ = ["SEVERITIES", "Diagnostic", "Report", "TargetResult", "merge_repeats", "module_span",
           "strict_json"]


class TargetResult:
    """Everything shapetrace found for one target (one module class, or one traced block).

    ``diagnostics`` are the trace's own (``Trace.diagnostics``) whenever there is a trace: one
    list of findings, which the report, its text, JSON and HTML all read; a result without a
    trace (a target that could not run) keeps its own.
    """

    def __init__(self, target: str, dims: dict[str, int] | None = None,
                 diagnostics: list[Diagnostic] | None = None, trace: Any = None,
                 error: str | None = None, skipped: list[str] | None = None,
                 notes: list[str] | None = None, exception: BaseException | None = None,
                 seconds: float | None = None, skips: list[Skip] | None = None):
        self.target = target
        self.dims: dict[str, int] = dict(dims or {})
        #: a ``shapetrace.Trace``, or None when the target could not run
        self.trace = trace
        self._diagnostics: list[Diagnostic] = []
        if diagnostics is not None:
            self.diagnostics = diagnostics
        self.error = error
        #: rules left out of the run (those that need values, under ``--fake``)
        self.skipped: list[str] = list(skipped or [])
        #: Observations that are not findings ("causal in practice", a check that could not run)
        self.notes: list[str] = list(notes or [])
        #: The exception behind ``error``, for ``--debug`` (not part of the JSON report)
        self.exception = exception
        #: How long the check took, in seconds (shown by the HTML report; not part of the JSON)
        self.seconds = seconds
        #: The checks that did not run, and why (``check()`` records them; None for a traced
        #: block, which the behaviour checks never re-run)
        self.skips = skips

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = getattr(self.trace, "diagnostics", None) if self.trace is not None else None
        return self._diagnostics if found is None else found

    @diagnostics.setter
    def diagnostics(self, found) -> None:
        found = list(found)
        if self.trace is not None and hasattr(type(self.trace), "add"):
            self.trace.diagnostics = found  # a Trace: its one list
        else:
            self._diagnostics = found

    def __repr__(self) -> str:
        return (f"TargetResult({self.target!r}, error={self.error!r}, "
                f"diagnostics={[d.rule for d in self.diagnostics]})")

    @property
    def ok(self) -> bool:
        """No error found and the target ran (a check that failed in shapetrace's own code
        does not fail the module, see :attr:`not_checked`, and is not said to have passed)."""
        return self.error is None and not any(d.severity == "error" for d in self.diagnostics)

    @property
    def checks(self) -> dict[str, list]:
        """Which checks (rule names, in the registry's order) ran and which did not, and why:
        ``{"ran": [...], "skipped": [{"check": ..., "reason": ...}]}``. Every rule is in one
        of the two, so a clean result can be told from an unchecked one."""
        from ..rules.registry import RULES

        internal = set(self.not_checked)
        if self.error is not None:
            why = dict.fromkeys(RULES, "the target could not run")
        else:
            why = {}
            skips = self.skips if self.skips is not None else [Skip(
                tuple(name for name, rule in RULES.items() if rule.kind == "behaviour"),
                "a traced block is not run again: the behaviour checks run on module targets "
                "(check(), a TARGET, a config target)")]
            for skip in [*skips, Skip(tuple(self.skipped), "--fake: shapes only, no values")]:
                for name in skip.checks:
                    why.setdefault(name, skip.reason)
        skipped = []
        for name in RULES:
            if name in why:
                entry = {"check": name, "reason": why[name]}
                if name in internal and self.error is None:
                    entry["internal_error"] = True
                skipped.append(entry)
        return {"ran": [name for name in RULES if name not in why], "skipped": skipped}

    @property
    def not_checked(self) -> list[str]:
        """The checks that failed in shapetrace's own code (an internal error, named in
        ``checks``' reasons): the target passed none of them, whatever its verdict on the rest."""
        found = {name: None for skip in self.skips or () if skip.internal for name in skip.checks}
        return list(found)

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
        steps = getattr(self.trace, "steps", None)
        if steps:  # a training run: each kind of step kept once (record.steps)
            out["steps"] = {"count": self.trace.step_count, "kept": [
                {"first": s.first, "last": s.last, "count": s.count, "rerun": s.rerun,
                 "records": [s.start, s.end]} for s in steps]}
        out["checks"] = self.checks
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
