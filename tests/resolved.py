"""A class of a test data file resolved and checked the way the CLI resolves it (``FILE::Class``)."""

from __future__ import annotations

from pathlib import Path

import shapetrace as st
from shapetrace.drive.targets import resolve_targets

ROOT = Path(__file__).resolve().parent.parent


def target(spec: str | Path, cls: str | None = None):
    """The one target ``spec`` (``FILE::Class``, or a file and a class name) names."""
    (found,) = resolve_targets(f"{spec}::{cls}" if cls else str(spec), root=ROOT)
    return found


def report(spec: str | Path, cls: str | None = None, **options):
    """The report of checking that target with ``options`` (as ``st.check`` takes them)."""
    found = target(spec, cls)
    return st.check(found.cls, target=found.display, **options)


def result(spec: str | Path, cls: str | None = None, **options):
    """That report's one target result."""
    return report(spec, cls, **options).targets[0]


def errors(checked) -> list[tuple[str, int]]:
    """The error-level findings of a target result, as (rule, line)."""
    return [(d.rule, d.line) for d in checked.diagnostics if d.severity == "error"]


def cli_json(capsys, *args: str) -> tuple[int, dict]:
    """``python -m shapetrace ARGS --format json`` run in-process: its exit code and report."""
    import json

    from shapetrace.frontends.cli import main

    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)
