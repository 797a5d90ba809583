"""GitHub Actions workflow commands: every finding as an inline annotation on the student's commit.

Under GitHub Actions (``GITHUB_ACTIONS=true``) a line of the job's log that reads
``::error file=F,line=L,title=T::MESSAGE`` becomes an annotation at that file and line (SPEC
sections 4 and 7). Errors are ``::error``, warnings ``::warning``, info-level findings
``::notice``; a target that could not run at all is one ``::error`` at its file when known.

Escaping follows the runner's rules (``actions/toolkit``'s ``command.ts``): in the message ``%``,
``\\r`` and ``\\n`` become ``%25``, ``%0D`` and ``%0A``; in a property value ``:`` and ``,``
become ``%3A`` and ``%2C`` as well. User text (messages quote the student's source) is made safe
first: control characters other than a newline are shown escaped, so nothing in a finding can
end the command early or start another one.

GitHub shows at most 10 annotations of each level per step and silently drops the rest, so a
run prints at most 10 of each (:func:`limited_commands`): the most important first (one per root
cause: the same rule and message in many students' copies of one file is one cause), the last one
saying how many more there are. The whole list goes to the job's summary page as a Markdown table
when ``GITHUB_STEP_SUMMARY`` names a file (:func:`write_step_summary`).

The CLI and the pytest plugin call it with plain data (``Diagnostic``, ``TargetResult``); the
plugin's xdist workers hand :class:`Annotation` s to the controller as JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from .safe import safe_text

_LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
#: GitHub shows at most this many annotations of each level per step
LIMIT = 10
_ORDER = ("error", "warning", "notice")


def github_actions() -> bool:
    """Whether this process runs as a GitHub Actions step (``GITHUB_ACTIONS=true``)."""
    return os.environ.get("GITHUB_ACTIONS", "").strip().lower() == "true"


def escape_data(text: str) -> str:
    """A command's message: ``%``, carriage return and newline escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): the message's escapes, then ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(level: str, message: str, *, file: str | None = None,
                     line: int | None = None, title: str | None = None) -> str:
    """One ``::level props::message`` line. ``level`` is error, warning or notice."""
    props = []
    if file:
        props.append(f"file={escape_property(_posix(file))}")
        if line:
            props.append(f"line={int(line)}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{escape_data(_clean(message))}"


def diagnostic_command(diagnostic) -> str:
    """A ``Diagnostic`` as a workflow command: the message, then its hint on the next line."""
    d = diagnostic
    return Annotation(_LEVELS.get(d.severity, "notice"), d.rule, d.message, "", file=d.file,
                      line=d.line, hint=d.hint, module=d.module).command()


def _source_of(result) -> str | None:
    """The file a target names (``student/attention.py::Name`` -> ``student/attention.py``)."""
    location = result.target.split("::")[0].strip()
    return location if location.endswith(".py") else None


def _clean(text: str) -> str:
    # newlines and tabs are kept (the command escapes newlines); other control characters shown
    return safe_text(text)


def _posix(path: str) -> str:
    return path.replace(os.sep, "/") if os.sep != "/" else path


# --- annotations as data: limited to what GitHub shows, and the whole list as a summary --------

@dataclass(frozen=True)
class Annotation:
    """One finding (or a target that could not run) to annotate: its level, where, the rule
    and the message, and the target it belongs to."""

    level: str  # error | warning | notice
    rule: str  # a rule's name, or "target-error"
    message: str
    target: str
    file: str | None = None
    line: int | None = None
    hint: str = ""
    module: str | None = None

    def command(self) -> str:
        text = self.message if not self.hint else f"{self.message}\nhint: {self.hint}"
        if self.module:
            text = f"{text}\n(in {self.module})"
        return workflow_command(self.level, text, file=self.file, line=self.line,
                                title=f"shapetrace {self.rule}")

    @property
    def cause(self) -> tuple:
        """What makes two annotations one root cause: the same rule saying the same thing (one
        bug in many copies of a file, or on many lines)."""
        return self.level, self.rule, self.message

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Annotation:
        return cls(**data)


def annotations(results: Iterable) -> list[Annotation]:
    """Every finding of ``results``, once (one bug seen by two tests is one annotation), and
    each target that could not run, in the order of the results."""
    return unique(_annotations_of(result) for result in results)


def unique(groups: Iterable[Iterable[Annotation]]) -> list[Annotation]:
    """The annotations, each command once (the first one's target kept), in order."""
    seen: dict[str, Annotation] = {}
    for group in groups:
        for a in group:
            seen.setdefault(a.command(), a)
    return list(seen.values())


def _annotations_of(result) -> list[Annotation]:
    if result.error is not None:
        return [Annotation("error", "target-error", f"{result.target}: {result.error}",
                           result.target, file=_source_of(result))]
    return [Annotation(_LEVELS.get(d.severity, "notice"), d.rule, _with_lines(d), result.target,
                       file=d.file, line=d.line, hint=d.hint, module=d.module)
            for d in result.diagnostics]


def _with_lines(d) -> str:
    """The message, naming the sibling lines of a mistake found on several (q, k and v)."""
    others = [str(line) for line in getattr(d, "lines", ()) if line != d.line]
    return f"{d.message} (the same on line{'s' if len(others) > 1 else ''} {', '.join(others)})" \
        if others else d.message


def limited_commands(found: Iterable[Annotation], limit: int = LIMIT) -> list[str]:
    """Workflow commands for ``found``, at most ``limit`` of each level: errors first, and within
    a level the first annotation of each root cause before the repeats; when there are more,
    the last command of the level says how many more, and where they all are."""
    by_level: dict[str, list[Annotation]] = {level: [] for level in _ORDER}
    for a in found:
        by_level.setdefault(a.level, []).append(a)
    out: list[str] = []
    for level, items in by_level.items():
        causes: dict[tuple, None] = {}
        first, repeats = [], []
        for a in items:
            (repeats if a.cause in causes else first).append(a)
            causes.setdefault(a.cause)
        ordered = first + repeats
        if len(ordered) <= limit:
            out += [a.command() for a in ordered]
            continue
        shown = ordered[:limit - 1]
        out += [a.command() for a in shown]
        more = len(ordered) - len(shown)
        where = "the job summary" if os.environ.get("GITHUB_STEP_SUMMARY") else "the log"
        out.append(workflow_command(level, f"{more} more {level}s not shown here (GitHub shows "
                                           f"{limit} per step): every finding is in {where}",
                                    title="shapetrace"))
    return out


def step_summary(found: Iterable[Annotation]) -> str:
    """Every annotation as a Markdown table for the job's summary page."""
    found = list(found)
    counts = {level: sum(a.level == level for a in found) for level in _ORDER}
    head = ", ".join(f"{n} {level}{'s' if n != 1 else ''}" for level, n in counts.items() if n)
    lines = [f"### shapetrace: {head or 'no findings'}", ""]
    if found:
        lines += ["| target | rule | file:line | message |", "|---|---|---|---|"]
        for a in found:
            where = f"{a.file}:{a.line}" if a.file and a.line else (a.file or "")
            lines.append(f"| {_cell(a.target)} | {a.level} {_cell(a.rule)} | {_cell(where)} | "
                         f"{_cell(a.message)} |")
    return "\n".join(lines) + "\n\n"


def write_step_summary(found: Iterable[Annotation]) -> str | None:
    """Append :func:`step_summary` to the file ``GITHUB_STEP_SUMMARY`` names, if any; the
    reason it could not be written, or None."""
    path = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
    if not path:
        return None
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(step_summary(found))
    except OSError as exc:
        return f"cannot write the step summary {path}: {exc.strerror}"
    return None


def _cell(text: str) -> str:
    """A Markdown table cell: user text made safe, pipes escaped, one line."""
    text = _clean(text).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.split("\n")).replace("\r", " ")
