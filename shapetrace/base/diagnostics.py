"""Findings as plain data: ``Diagnostic``, and the helpers that merge and serialise them.

Rules and behaviour checks build Diagnostics through ``rules.registry.diagnostic``; reports
(``report.results``) collect them. This module imports nothing of shapetrace."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

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
    #: The index of the op record the finding is about (``OpRecord.index``), or None. JSON
    #: writes it as ``data.index``.
    record: int | None = None
    #: One bug, one finding: how often the rule fired at this line (12 layers, 11 heads), and
    #: the distinct module paths it fired in, in trace order (``module`` is the first).
    count: int = 1
    modules: list[str] = field(default_factory=list)
    #: One root cause, one finding: every line the same rule found the same mistake on, with
    #: the same fix (``q``, ``k`` and ``v`` split the same wrong way); ``line`` is the first,
    #: and ``more_records`` the records of the others.
    lines: list[int] = field(default_factory=list)
    more_records: list[int] = field(default_factory=list)
    #: Where the wrong value took effect, ``(file, line)``, when ``file``/``line`` name the
    #: line that made it (the scale chosen in ``__init__``, the mask built, the softmax module
    #: constructed with its ``dim``) and that is another line; None when they are one place.
    used_at: tuple[str | None, int] | None = None

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        if not self.modules and self.module:
            self.modules = [self.module]
        if not self.lines and self.line is not None:
            self.lines = [self.line]

    @property
    def module_span(self) -> str:
        """The modules in words: ``Wrapper.heads.0 ... heads.10`` for a finding repeated in
        numbered modules, the one module path otherwise."""
        return module_span(self.modules) or (self.module or "")

    @property
    def location(self) -> str:
        """``attention.py:42``; ``attention.py:42, 43, 44`` for one mistake on sibling lines."""
        if self.file is None:
            return ""
        if len(self.lines) > 1:
            return f"{self.file}:{', '.join(map(str, self.lines))}"
        return f"{self.file}:{self.line}" if self.line else self.file

    def made_at(self, place: tuple[str | None, int | None] | None) -> Diagnostic:
        """This finding placed at ``place`` (``(file, line)``), the line that made the wrong
        value, when that is another line; its op's place kept as ``used_at``."""
        if not place or place[1] is None or (place[0] or self.file, place[1]) == (self.file, self.line):
            return self
        if self.line is not None:
            self.used_at = (self.file, self.line)
        self.file, self.line, self.lines = place[0] or self.file, place[1], [place[1]]
        return self

    @property
    def used_location(self) -> str:
        """``attention.py:54``: where the value made at ``location`` took effect, or ""."""
        if self.used_at is None:
            return ""
        file, line = self.used_at
        return f"{file}:{line}" if file else f"line {line}"

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
            "count": self.count,
            "modules": list(self.modules),
            "lines": list(self.lines),
        }
        if self.used_at is not None:
            out["used_at"] = {"file": self.used_at[0], "line": self.used_at[1]}
        data = self.data if self.record is None else {**self.data, "index": self.record}
        if data:
            out["data"] = strict_json(data)
        return out


@dataclass(frozen=True)
class Skip:
    """Checks that did not run for a target, and why: ``checks`` are rule names. A report lists
    them beside the checks that ran, so a clean result can be told from an unchecked one."""

    checks: tuple[str, ...]
    reason: str
    #: the checks failed in shapetrace's own code (an internal error, to be reported): they
    #: are not the module's fault, and the report says that they did not run
    internal: bool = False


def module_span(modules: list[str]) -> str:
    """``["W.heads.0", ..., "W.heads.10"]`` -> ``W.heads.0 ... heads.10``: the first path whole,
    the last without the leading segments it shares with the first."""
    if len(modules) <= 1:
        return modules[0] if modules else ""
    first, last = modules[0].split("."), modules[-1].split(".")
    shared = 0
    while shared < min(len(first), len(last)) - 1 and first[shared] == last[shared]:
        shared += 1
    if shared and last[shared].isdigit():
        shared -= 1  # heads.10, not a bare 10
    tail = ".".join(last[shared:])
    return f"{modules[0]} ... {tail}" if len(modules) > 2 else f"{modules[0]}, {tail}"


def merge_repeats(diagnostics: list[Diagnostic], step=None) -> list[Diagnostic]:
    """One bug, one finding (SPEC section 3): findings of the same rule and severity at the
    same file and line (the same line run by 11 heads or 12 layers, or in a loop) become the
    first of them, with ``count`` and ``modules`` summed up. Order is kept; merging merged
    findings again changes nothing. ``step``: a finding -> the kind of training step it was
    found in (``record.steps``); the same finding in a later kind of step is the same bug seen
    again, not more of it, and is not counted."""
    kept: dict[tuple, Diagnostic] = {}
    out: list[Diagnostic] = []
    for d in diagnostics:
        if d.file is None or d.line is None:
            out.append(d)
            continue
        key = (d.rule, d.severity, d.file, d.line)
        first = kept.get(key)
        if first is None:
            kept[key] = d
            out.append(d)
            continue
        if step is None or step(d) == step(first):
            first.count += d.count
        for m in d.modules:
            if m not in first.modules:
                first.modules.append(m)
    return out


#: sibling lines are at most this far apart (``q``, ``k`` and ``v`` on neighbouring lines)
SIBLING_LINES = 3


def merge_siblings(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One root cause, one finding (SPEC section 5): findings of the same rule, with the same
    message and the same advice, in the same module and file, on lines at most
    ``SIBLING_LINES`` apart (the same wrong split for ``q``, ``k`` and ``v``), become the first
    of them with every line in ``lines``; each line's own corrected line is kept in
    ``data["fixes"]``. Order is kept; merging merged findings again changes nothing."""
    groups: dict[tuple, Diagnostic] = {}
    out: list[Diagnostic] = []
    for d in diagnostics:
        if d.file is None or d.line is None:
            out.append(d)
            continue
        key = (d.rule, d.severity, d.file, d.module, d.message, _advice(d))
        first = groups.get(key)
        if first is not None and all(line not in first.lines for line in d.lines) \
                and min(abs(a - b) for a in first.lines for b in d.lines) <= SIBLING_LINES:
            fixes = first.data.setdefault("fixes", [first.data["fix"]] if first.data.get("fix")
                                          else [])
            fixes.extend(d.data.get("fixes") or ([d.data["fix"]] if d.data.get("fix") else []))
            first.lines = sorted({*first.lines, *d.lines})
            first.more_records.extend(r for r in (d.record, *d.more_records) if r is not None)
            continue
        groups[key] = d
        out.append(d)
    for d in out:
        if len(d.data.get("fixes", ())) < 2:
            d.data.pop("fixes", None)
    return out


def _advice(d: Diagnostic) -> str:
    """The hint without the corrected line it ends with (each line's own)."""
    fix = d.data.get("fix") if d.data else None
    if not fix:
        return d.hint
    cut = d.hint.rfind(f": {fix['line']}  ")
    return d.hint[:cut] if cut >= 0 else d.hint
