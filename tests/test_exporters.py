"""Report formats: one table (``shapetrace.render.EXPORTERS``), read by the CLI and the plugin.

Every format in the table must round-trip from ``--format NAME``, from ``--output FILE.SUFFIX``
and from the plugin's ``--shapetrace-report=FILE.SUFFIX``: JSON parses strictly, HTML tags
balance, SVG parses as XML, text carries no colour codes when it does not go to a terminal. A
format added to the table without a check here fails ``test_every_format_has_a_check``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from shapetrace.frontends.cli import main
from shapetrace.render import EXPORTERS, format_choices
from test_pytest_plugin import BUGGY_TARGET, make_project, run

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
JUMBLED = "tests/data/cli/models.py::JumbledAttention"


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


class _Balance(HTMLParser):
    """Fails on a closing tag that does not close the innermost open element."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}

    def __init__(self):
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()


def check_text(text: str) -> None:
    assert "\x1b[" not in text
    assert "reshape-jumble" in text
    assert [line for line in text.splitlines() if line != line.rstrip()] == []


def check_json(text: str) -> None:
    data = _strict_json(text)
    assert set(data) == {"shapetrace", "targets"}
    rules = [d["rule"] for t in data["targets"] for d in t["diagnostics"]]
    assert "reshape-jumble" in rules
    assert not [key for t in data["targets"] for key in t if key.startswith("_")]


def check_html(text: str) -> None:
    assert text.startswith("<!DOCTYPE html>")
    parser = _Balance()
    parser.feed(text)
    parser.close()
    assert parser.open == []
    assert "reshape-jumble" in text and "style=" in text


def check_svg(text: str) -> None:
    root = ET.fromstring(text)
    assert root.tag.endswith("svg")
    assert "reshape-jumble" in readable("svg", text)


def readable(name: str, text: str) -> str:
    """The words a reader sees (SVG writes its spaces as no-break spaces in text elements)."""
    if name != "svg":
        return text
    return "".join(ET.fromstring(text).itertext()).replace("\xa0", " ")


CHECKS = {"text": check_text, "json": check_json, "html": check_html, "svg": check_svg}

FORMATS = [pytest.param(name, id=name) for name in EXPORTERS]
SUFFIXES = [pytest.param(name, suffix, id=f"{name}-{suffix[1:]}")
            for name, e in EXPORTERS.items() for suffix in e.suffixes]


def test_every_format_has_a_check():
    assert set(CHECKS) == set(EXPORTERS)


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(ROOT)


# --- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("name", FORMATS)
def test_cli_format(capsys, in_repo, name):
    assert main([JUMBLED, "--fake", "--format", name]) == 1
    CHECKS[name](capsys.readouterr().out)


@pytest.mark.parametrize(("name", "suffix"), SUFFIXES)
def test_cli_output_suffix(capsys, in_repo, tmp_path, name, suffix):
    path = tmp_path / f"report{suffix}"
    assert main([JUMBLED, "--fake", "--output", str(path)]) == 1
    assert capsys.readouterr().out == ""
    CHECKS[name](path.read_text(encoding="utf-8"))


# --- the pytest plugin -------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "suffix"), [pytest.param(name, e.suffixes[0], id=name)
                                              for name, e in EXPORTERS.items()])
def test_plugin_report(pytester, name, suffix):
    make_project(pytester)
    result = run(pytester, f"--shapetrace-report=report{suffix}")
    result.stdout.fnmatch_lines([f"*shapetrace report (2 results): report{suffix}*"])
    text = (pytester.path / f"report{suffix}").read_text(encoding="utf-8")
    CHECKS[name](text)
    if EXPORTERS[name].painted:  # the document's title, summary and a heading per target
        text = readable(name, text)
        assert "2 checked: 1 failed, 1 passed" in text
        assert f"{BUGGY_TARGET.removeprefix('shapetrace::')} (failed)" in text
    else:
        assert {t["test"] for t in _strict_json(text)["targets"]} >= {BUGGY_TARGET}


# --- one table for both ------------------------------------------------------------------------

def test_cli_and_plugin_refuse_an_unknown_format_with_the_same_list(capsys, in_repo, pytester):
    assert main([JUMBLED, "--fake", "--format", "pdf"]) == 2
    cli_error = capsys.readouterr().err
    result = run(pytester, "--shapetrace-report=report.pdf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    plugin_error = result.stderr.str()
    choices = format_choices()
    assert f"use one of {choices}" in cli_error
    assert f"use one of {choices}" in plugin_error
    for name, e in EXPORTERS.items():
        assert name in choices and all(suffix in choices for suffix in e.suffixes)


def test_help_names_every_format(capsys, pytester):
    with pytest.raises(SystemExit):
        main(["--help"])
    cli_help = capsys.readouterr().out
    plugin_help = run(pytester, "--help").stdout.str()
    assert [name for name in EXPORTERS if name not in cli_help] == []
    assert [e.suffixes[0] for e in EXPORTERS.values() if e.suffixes[0] not in plugin_help] == []
