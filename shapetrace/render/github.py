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

The CLI and the pytest plugin call it with plain data (``Diagnostic``, ``TargetResult``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .safe import safe_text

_LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


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
    message = d.message if not d.hint else f"{d.message}\nhint: {d.hint}"
    if d.module:
        message = f"{message}\n(in {d.module})"
    return workflow_command(_LEVELS.get(d.severity, "notice"), message, file=d.file, line=d.line,
                            title=f"shapetrace {d.rule}")


def result_commands(result, *, source: str | None = None) -> list[str]:
    """Every finding of one ``TargetResult``; a target that could not run is one ``::error``
    at ``source`` (its file, when known) titled ``shapetrace target-error``."""
    if result.error is not None:
        return [workflow_command("error", f"{result.target}: {result.error}", file=source,
                                 title="shapetrace target-error")]
    return [diagnostic_command(d) for d in result.diagnostics]


def results_commands(results: Iterable) -> list[str]:
    """The commands of many results, each finding once (one bug seen by two tests is one
    annotation: GitHub shows only the first few per step)."""
    seen: dict[str, None] = {}
    for result in results:
        source = _source_of(result)
        for command in result_commands(result, source=source):
            seen.setdefault(command)
    return list(seen)


def _source_of(result) -> str | None:
    """The file a target names (``student/attention.py::Name`` -> ``student/attention.py``)."""
    location = result.target.split("::")[0].strip()
    return location if location.endswith(".py") else None


def _clean(text: str) -> str:
    # newlines and tabs are kept (the command escapes newlines); other control characters shown
    return safe_text(text)


def _posix(path: str) -> str:
    return path.replace(os.sep, "/") if os.sep != "/" else path
