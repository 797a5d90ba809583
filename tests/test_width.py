"""Width: ``--width`` and ``print(width=)`` everywhere, else ``COLUMNS``, else the terminal's,
else 100 (files); a line too wide breaks between shapes, never inside a token."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
import torch

import shapetrace
from shapetrace.frontends.cli import main
from shapetrace.render import default_width

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SHAPE = re.compile(r"\((?:[0-9A-Za-z_*]+, )+[0-9A-Za-z_*]+\)")
RAISES = "tests/data/scripts/raises.py"
QKV = "tests/data/scripts/qkv_walkthrough.py"


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _tokens_whole(text: str) -> None:
    """``raised RuntimeError`` and both operand shapes sit whole on their lines."""
    assert "raised RuntimeError" in text
    assert text.count("(6, 4)") >= 4


def _widest(text: str) -> int:
    return max(len(line.rstrip()) for line in text.splitlines())


@pytest.mark.parametrize("width", [40, 52, 60, 73, 100, 140])
def test_width_flag_is_respected_and_breaks_no_token(capsys, monkeypatch, width):
    monkeypatch.delenv("COLUMNS", raising=False)
    code = main([RAISES, "--width", str(width)])
    out = capsys.readouterr().out
    assert code == 1
    assert _widest(out) <= width
    trace_part = out.split("error op-failed")[0]
    assert "raised RuntimeError" in trace_part
    _tokens_whole(trace_part)


@pytest.mark.parametrize("columns", [70, 120])
def test_piped_output_follows_columns(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    main([QKV])
    out = capsys.readouterr().out
    assert _widest(out) == columns  # the title rule spans the width


def test_output_file_is_100_columns_whatever_the_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "70")
    report = tmp_path / "report.txt"
    main([QKV, "--output", str(report)])
    assert _widest(report.read_text()) == 100


def test_default_width_without_terminal_or_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=1: (_ for _ in ()).throw(OSError()))
    assert default_width() == 100


def test_default_width_is_the_terminals_even_when_stdout_is_piped(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)

    def size(fd=1):
        if fd == 1:
            raise OSError("not a terminal")  # stdout is a pipe
        return os.terminal_size((80, 24))

    monkeypatch.setattr(os, "get_terminal_size", size)
    assert default_width() == 80


def _long_trace():
    x = torch.randn(6, 8, 4, 9)
    with shapetrace.trace() as t:
        y = x.permute(0, 2, 1, 3).reshape(6, 4, 72)
        torch.cat([y, y, y], dim=-1) + torch.zeros(6, 4, 216)
    return t


@pytest.mark.parametrize("width", [40, 60, 80, 110, 160])
def test_print_width_into_a_file(width, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    buffer = io.StringIO()
    t = _long_trace()
    from shapetrace.render import make_console

    t.print(console=make_console(color=False, width=width, file=buffer), width=width)
    text = buffer.getvalue()
    assert _widest(text) <= width
    wide = io.StringIO()
    t.print(console=make_console(color=False, width=1000, file=wide), width=1000)
    shapes = {shape for shape in SHAPE.findall(wide.getvalue().split("\n\n")[0])
              if not any(shape in r.source for r in t.records)}  # not the code's own tuples
    assert len(shapes) >= 4
    for shape in shapes:
        assert shape in text  # whole on one line, never cut in two



def test_print_width_wider_than_80_is_kept(monkeypatch, capsys):
    """``t.print(width=110)`` when stdout is a file: 110 columns, not rich's default 80."""
    monkeypatch.delenv("COLUMNS", raising=False)
    t = _long_trace()
    t.print(width=110)
    out = capsys.readouterr().out
    assert 80 < _widest(out) <= 110


# --- the pytest plugin: the same rules as the command line ------------------------------------

_PLUGIN_TEST = '''
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F


class Jumbled(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, self.n_head, T, C // self.n_head) for t in (q, k, v))
        return F.softmax(q @ k.transpose(-2, -1) * k.size(-1) ** -0.5, dim=-1) @ v


@pytest.mark.shapetrace
def test_attention():
    model = Jumbled(143, 11)
    model(torch.randn(5, 7, 143))
'''


def _shapetrace_lines(output: str) -> list[str]:
    """The lines shapetrace wrote into pytest's output: its failure message after the
    headline, and its trace section."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "shapetrace found" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("=") and "short test" in line)
    return [line for line in lines[start + 1:end] if not line.startswith(("_", "-", "="))]


@pytest.mark.parametrize("columns", [pytest.param("64", id="COLUMNS=64"),
                                     pytest.param(None, id="no-terminal-100")])
def test_plugin_text_follows_the_command_lines_width(pytester, monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # pytester's subprocess has no terminal
    else:
        monkeypatch.setenv("COLUMNS", columns)
    width = int(columns or 100)
    pytester.makepyfile(test_student=_PLUGIN_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=1)
    lines = _shapetrace_lines(result.stdout.str())
    assert any("reshape-jumble" in line for line in lines)
    assert max(len(line.rstrip()) for line in lines) <= width
    assert max(len(line.rstrip()) for line in lines) > 60  # the width is used, not a narrow one
    text = "\n".join(lines)
    assert "(B, T, C)" in text and "(B, H, T, d)" in text  # whole shapes, never cut in two
