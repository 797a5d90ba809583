"""The README and the pages under docs/: every output they show is real, every link resolves,
and every flag and config key is documented.

How a page marks what is checked (an HTML comment on the line before a fenced block):

- ``<!-- file: NAME -->``: the block is a file. The test writes it to NAME in a temporary
  directory before it runs any checked command that follows on the same page.
- ``<!-- checked -->`` or ``<!-- checked (exit N) -->``: the block shows output. Its first line
  is ``$ COMMAND``; the test runs COMMAND with bash in a temporary directory that holds a copy
  of ``examples/`` and the page's files, with ``COLUMNS=100`` and ``NO_COLOR=1``, ``python``
  and ``pytest`` being this interpreter (``sys.executable``). Every other line of the block
  must appear in the output (stdout, then stderr), in order: a line that is ``...`` skips any
  amount, and ``...`` inside a line separates fragments. The exit code must be N (default 0).

A fenced block without a language, or marked ``text``, ``console`` or ``json``, shows output,
so it must be checked. docs/architecture.md is written elsewhere and is not read here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NOT_OURS = {"architecture.md"}
PAGES = [README] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in NOT_OURS)
OUTPUT_LANGUAGES = {"", "text", "console", "json", "output"}
ENV = {"COLUMNS": "100", "NO_COLOR": "1"}

FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)")
MARK = re.compile(r"^<!--\s*(?:checked(?:\s*\(exit (?P<exit>\d+)\))?|file:\s*(?P<file>\S+))\s*-->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    mark: str | None  # the comment before it, if any
    exit: int = 0
    file: str | None = None

    @property
    def checked(self) -> bool:
        return self.mark is not None and self.file is None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, each with the marking comment just before it."""
    found, lines = [], page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, language, start = opening.group(1), opening.group(2), i
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        mark = MARK.match(before)
        found.append(Block(page, start + 1, language, "\n".join(body),
                           before if mark else None,
                           int(mark.group("exit") or 0) if mark else 0,
                           mark.group("file") if mark else None))
    return found


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]
CHECKED = [b for b in ALL_BLOCKS if b.checked]


def _id(block: Block) -> str:
    command = block.text.splitlines()[0].removeprefix("$ ") if block.text else ""
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", command.replace("python -m shapetrace", "shapetrace"))
    return f"{block.where}-{slug.strip('-')[:48]}"


# --- running what a page shows ----------------------------------------------------------------

@pytest.fixture(scope="session")
def bin_dir(tmp_path_factory) -> Path:
    """``python`` and ``pytest`` for the pages' commands: this interpreter, whatever PATH says."""
    folder = tmp_path_factory.mktemp("bin")
    for name, args in (("python", ""), ("pytest", " -m pytest")):
        path = folder / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}"{args} "$@"\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def run(command: str, cwd: Path, bin_dir: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    # As on a user's terminal: CI and BUILD_NUMBER make pytest print whole summary lines.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "GITHUB_", "FORCE_COLOR", "PY_COLORS", "CLICOLOR"))
           and k not in ("CI", "BUILD_NUMBER")}
    env.update(ENV, PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=timeout)


def shown_pieces(lines: list[str]) -> list[str]:
    """What must appear, in order: each line, split at ``...``; a bare ``...`` is a gap."""
    pieces = []
    for line in lines:
        for piece in line.rstrip().split("..."):
            if piece.strip():
                pieces.append(piece)
    return pieces


def missing_from(output: str, pieces: list[str]) -> str | None:
    """The first piece not found in ``output`` after the ones before it, else None."""
    at = 0
    for piece in pieces:
        found = output.find(piece, at)
        if found < 0:
            return piece
        at = found + len(piece)
    return None


def setup_files(block: Block, folder: Path) -> None:
    shutil.copytree(ROOT / "examples", folder / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "results.json"))
    for earlier in blocks(block.page):
        if earlier.file and earlier.line < block.line:
            path = folder / earlier.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(earlier.text + "\n", encoding="utf-8")


@pytest.mark.skipif(shutil.which("bash") is None, reason="the pages' commands are bash")
@pytest.mark.parametrize("block", [pytest.param(b, id=_id(b)) for b in CHECKED])
def test_shown_output_is_real(block, tmp_path, bin_dir):
    first, *shown = block.text.splitlines()
    assert first.startswith("$ "), f"{block.where}: a checked block starts with '$ COMMAND'"
    setup_files(block, tmp_path)
    result = run(first[2:], tmp_path, bin_dir)
    output = result.stdout + "\n" + result.stderr
    missing = missing_from(output, shown_pieces(shown))
    assert missing is None, (f"{block.where}: {missing!r} is not in the output of "
                             f"{first[2:]!r}:\n{output}")
    assert result.returncode == block.exit, (
        f"{block.where}: {first[2:]!r} exited {result.returncode}, the page says {block.exit}:"
        f"\n{output}")


@pytest.mark.parametrize("block", [pytest.param(b, id=_id(b)) for b in ALL_BLOCKS
                                   if b.language in OUTPUT_LANGUAGES])
def test_every_output_block_is_checked(block):
    assert block.checked, (f"{block.where} shows output but is not checked: put "
                           f"<!-- checked --> before it and start it with '$ COMMAND', or give "
                           f"the block a language")


def test_the_convention_is_used():
    """A typo in a marking comment would silently leave a block unchecked."""
    assert len(CHECKED) >= 10
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*<!--\s*(checked|file)", line):
                assert MARK.match(line.strip()), f"{page.name}:{number}: malformed mark {line!r}"


# --- links -----------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slugs(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    found = set()
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def links():
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in LINK.findall(text):
            if not re.match(r"[a-z]+:", target):
                yield pytest.param(page, target, id=f"{page.relative_to(ROOT)}->{target}")


@pytest.mark.parametrize("page, target", list(links()))
def test_relative_link_resolves(page, target):
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    assert file.exists(), f"{page.name} links to {target}, which does not exist"
    if anchor and file.suffix == ".md":
        assert anchor in slugs(file), f"{page.name} links to {target}: no such heading"


# --- README's shape ----------------------------------------------------------------------------

def readme_lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def test_readme_is_short():
    assert len(readme_lines()) <= 250


def test_quick_start_comes_early_with_one_block_of_two_commands():
    lines = readme_lines()
    start = lines.index("## Quick start")
    assert start < 60, "## Quick start must start within the first 60 lines"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = [b for b in blocks(README) if start < b.line - 1 < end]
    assert len(section) == 1 and section[0].language == "bash"
    commands = [c for c in section[0].text.splitlines() if c.strip() and not c.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("python -m shapetrace")  # the demo
    ci = ROOT / ".ci" / "run"
    if ci.exists():  # CI runs the second command, exactly
        assert commands[1] in ci.read_text(encoding="utf-8").splitlines()


def test_readme_lists_every_rule(bin_dir, tmp_path):
    result = run("python -m shapetrace --rules --format json", tmp_path, bin_dir)
    rules = json.loads(result.stdout)
    readme = README.read_text(encoding="utf-8")
    missing = [r["code"] for r in rules if f"| {r['code']} | {r['rule']} |" not in readme]
    assert not missing, f"README's rules table lacks {missing}"


def test_readme_lists_every_example():
    readme = README.read_text(encoding="utf-8")
    folders = sorted(p.parent.name for p in (ROOT / "examples").glob("*/buggy.py"))
    assert folders
    assert [f for f in folders if f"](examples/{f}/)" not in readme] == []


# --- everything documented ---------------------------------------------------------------------

def documented(*names: str) -> str:
    return "\n".join((ROOT / "docs" / n).read_text(encoding="utf-8") for n in names)


def mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def test_every_command_line_flag_is_documented(bin_dir, tmp_path):
    result = run("python -m shapetrace --help", tmp_path, bin_dir)
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", result.stdout)))
    assert "--init" in flags and "--timeout" in flags
    text = documented("usage.md", "grading.md")
    assert [f for f in flags if not mentions(text, f)] == []


def test_every_config_key_is_documented(bin_dir, tmp_path):
    """The keys are read from the config reader's own message for an unknown key."""
    keys = []
    for toml in ("zzzz_unknown = 1\n",
                 '[[targets]]\ntarget = "a.py::A"\nzzzz_unknown = 1\n'):
        (tmp_path / "shapetrace.toml").write_text(toml)
        result = run("python -m shapetrace --config shapetrace.toml", tmp_path, bin_dir)
        listed = re.search(r"expected one of ([\w, ]+)", result.stderr)
        assert listed, result.stderr
        keys += [k.strip() for k in listed.group(1).split(",")]
    assert {"target", "init", "reference", "points", "timeout", "dims"} <= set(keys)
    text = documented("usage.md", "grading.md")
    assert [k for k in keys if f"`{k}`" not in text] == []


def test_every_pytest_option_is_documented(bin_dir, tmp_path):
    result = run("python -m pytest --help", tmp_path, bin_dir)
    options = sorted(set(re.findall(r"--shapetrace[\w-]*", result.stdout)))
    ini = sorted(set(re.findall(r"^  (shapetrace\w*) \(", result.stdout, flags=re.M)))
    assert "--shapetrace-gradescope" in options and "shapetrace_report" in ini
    text = documented("grading.md")
    assert [o for o in options if not mentions(text, o)] == []
    assert [i for i in ini if f"`{i}" not in text] == []
