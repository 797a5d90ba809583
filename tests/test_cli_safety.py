"""The command line is safe with what it is given: ``--output`` never overwrites a checked file
and stays put when user code changes directory, bad ``--width``/empty list items are usage
errors, a quoted ``--init`` value stays a string, ``forward(*args, **kwargs)`` asks for
``--input``, JSON is strict, control characters in user text are shown escaped, and nothing the
checked code writes to stdout (even on file descriptor 1) corrupts a JSON report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from shapetrace.frontends.cli import main
from shapetrace.report.results import Diagnostic, Report, TargetResult
from shapetrace.base.specs import parse_init, resolve_init

from test_cli import CORRECT, ROOT, _in_repo_root, assert_one_line_error, run  # noqa: F401


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def strict_loads(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


LINEAR = """\
import torch.nn as nn


class Lin(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.lin = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.lin(x)
"""


# 1. --output never overwrites a target or the config, and is fixed before user code runs -------

@pytest.mark.parametrize("case", ["target-file", "target-file-other-spelling", "target-with-name",
                                  "config-file", "target-named-in-config"])
def test_output_never_overwrites_a_checked_file(capsys, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    model = write(tmp_path / "m.py", LINEAR)
    config = write(tmp_path / "shapetrace.toml", """\
        [[targets]]
        target = "m.py::Lin"
        """)
    argv, output = {
        "target-file": (["m.py"], "m.py"),
        "target-file-other-spelling": (["m.py"], str(tmp_path / "." / "m.py")),
        "target-with-name": (["m.py::Lin"], "m.py"),
        "config-file": (["--config", "shapetrace.toml"], "shapetrace.toml"),
        "target-named-in-config": (["--config", "shapetrace.toml"], "m.py"),
    }[case]
    before = {p: Path(p).read_text() for p in (model, config)}
    code, out, err = run(capsys, *argv, "--fake", "-o", output)
    assert code == 2
    assert_one_line_error(err, "--output", "overwrite")
    assert {p: Path(p).read_text() for p in (model, config)} == before


def test_output_is_resolved_before_the_forward_changes_directory(capsys, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write(tmp_path / "wanders.py", f"""\
        import os
        import torch.nn as nn


        class Wanders(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                os.chdir({str(elsewhere)!r})
                return self.lin(x)
        """)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "wanders.py", "--fake", "-o", "report.json")
    assert code == 0, err
    assert strict_loads((tmp_path / "report.json").read_text())["targets"][0]["ok"]
    assert not (elsewhere / "report.json").exists()


# 2. --width in range ---------------------------------------------------------------------------

@pytest.mark.parametrize("width", [
    pytest.param("0", id="zero"),
    pytest.param("-5", id="negative"),
    pytest.param("1001", id="just-too-wide"),
    pytest.param(str(10**9), id="a-billion"),
])
def test_width_out_of_range_is_refused(capsys, width):
    with pytest.raises(SystemExit) as exc_info:
        main([CORRECT, "--fake", "--width", width])
    assert exc_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    error_lines = [line for line in err.splitlines() if line.startswith("shapetrace: error:")]
    assert len(error_lines) == 1 and "--width" in error_lines[0], err


def test_widest_width_is_accepted(capsys):
    code, out, err = run(capsys, CORRECT, "--fake", "--width", "1000")
    assert code == 0, err


# 3. An empty item in a list is a typo, not nothing ---------------------------------------------

@pytest.mark.parametrize("argv, fragment", [
    pytest.param(["--input", "x=B,,C"], "empty", id="input-double-comma"),
    pytest.param(["--input", "x=B,T,,"], "empty", id="input-double-comma-at-end"),
    pytest.param(["--input", "x=,T,C"], "empty", id="input-leading-comma"),
    pytest.param(["--init", "n_embd=C,,n_head=H,block_size=23"], "empty", id="init-double-comma"),
    pytest.param(["--init", ",n_embd=C,n_head=H,block_size=23"], "empty", id="init-leading-comma"),
    pytest.param(["--dims", "B=3,,T=5"], "empty", id="dims-double-comma"),
    pytest.param(["--dims", ",B=3"], "empty", id="dims-leading-comma"),
])
def test_empty_list_item_is_a_usage_error(capsys, argv, fragment):
    code, out, err = run(capsys, CORRECT, "--fake", *argv)
    assert code == 2
    assert_one_line_error(err, fragment)


@pytest.mark.parametrize("argv", [
    pytest.param(["--input", "x=B,T,C,"], id="input"),
    pytest.param(["--init", "n_embd=C,n_head=H,block_size=23,"], id="init"),
    pytest.param(["--dims", "B=3,"], id="dims"),
])
def test_one_trailing_comma_is_allowed(capsys, argv):
    code, out, err = run(capsys, CORRECT, "--fake", *argv)
    assert code == 0, err


# 4. A quoted --init value stays a string ---------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    pytest.param("label='C'", "C", id="single-quoted-dim-name"),
    pytest.param('label="C"', "C", id="double-quoted-dim-name"),
    pytest.param("label=C", 143, id="unquoted-dim-name-is-its-size"),
    pytest.param("label='gelu'", "gelu", id="quoted-other-string"),
    pytest.param("label=gelu", "gelu", id="unquoted-other-string"),
])
def test_quoted_init_value_is_a_string(text, expected):
    resolved = resolve_init(parse_init(text), {"B": 5, "C": 143})
    assert resolved == {"label": expected}
    assert type(resolved["label"]) is type(expected)


@pytest.mark.parametrize("label, code", [
    pytest.param("label='C'", 0, id="quoted-reaches-the-constructor-as-a-string"),
    pytest.param("label=C", 2, id="unquoted-reaches-it-as-a-size"),
])
def test_quoted_init_value_reaches_the_constructor(capsys, tmp_path, label, code):
    model = write(tmp_path / "labelled.py", """\
        import torch.nn as nn


        class Labelled(nn.Module):
            def __init__(self, n_embd, label):
                super().__init__()
                if type(label) is not str or label != "C":
                    raise ValueError(f"label is {label!r}")
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
        """)
    got, out, err = run(capsys, f"{model}::Labelled", "--fake", "--init", f"n_embd=C,{label}")
    assert got == code, err


# 5. forward(*args, **kwargs) needs --input -------------------------------------------------------

@pytest.mark.parametrize("signature, shown", [
    pytest.param("self, *args, **kwargs", "*args/**kwargs", id="args-and-kwargs"),
    pytest.param("self, *inputs", "*inputs", id="args-only"),
    pytest.param("self, **kwargs", "**kwargs", id="kwargs-only"),
])
def test_variadic_forward_asks_for_input(capsys, tmp_path, signature, shown):
    model = write(tmp_path / "variadic.py", f"""\
        import torch.nn as nn


        class Variadic(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward({signature}):
                raise AssertionError("called without inputs")
        """)
    code, out, err = run(capsys, f"{model}::Variadic", "--fake")
    assert code == 2
    assert_one_line_error(err, shown, "--input NAME=DIMS")


def test_variadic_forward_runs_with_input(capsys, tmp_path):
    model = write(tmp_path / "variadic.py", """\
        import torch.nn as nn


        class Variadic(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, *args, **kwargs):
                return self.lin(args[0])
        """)
    code, out, err = run(capsys, f"{model}::Variadic", "--fake", "--input", "x=B,T,C")
    assert code == 0, err


# 6. Strict JSON ----------------------------------------------------------------------------------

def _non_finite_report() -> Report:
    data = {"scale": float("inf"), "grid": [[float("nan"), -float("inf")], [1.5, 0.0]]}
    diagnostic = Diagnostic("attention-scale", "warning", "scores are scaled by inf", data=data)
    return Report([TargetResult("m.py::M", dims={"B": 5}, diagnostics=[diagnostic])])


@pytest.mark.parametrize("how", ["exporter", "command-line"])
def test_json_is_strict_with_non_finite_data(capsys, monkeypatch, how):
    if how == "exporter":
        from shapetrace.render import EXPORTERS

        text = EXPORTERS["json"].export(_non_finite_report())
    else:
        from shapetrace.drive import jobs as _jobs

        monkeypatch.setattr(_jobs.Job, "check",
                            lambda self, target, **kw: _non_finite_report().targets[0])
        code, text, err = run(capsys, CORRECT, "--fake", "--format", "json")
        assert code == 0, err
    data = strict_loads(text)["targets"][0]["diagnostics"][0]["data"]
    assert data == {"scale": "inf", "grid": [["nan", "-inf"], [1.5, 0.0]]}


# 7. Control characters in user text are shown, never obeyed --------------------------------------

# (user text, how plain text shows it: escaped, or dropped where rich itself drops it)
NASTY = [
    pytest.param("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m", id="ansi-colour"),
    pytest.param("\x1b]8;;https://example.com\x07link\x1b]8;;\x07",
                 "\\x1b]8;;https://example.comlink", id="osc-hyperlink"),
    pytest.param("nul\x00and\x01soh", "nul\\x00and\\x01soh", id="c0-controls"),
    pytest.param("csi\x9b2J", "csi\\x9b2J", id="c1-csi"),
    pytest.param("over\rwrite", "overwrite", id="carriage-return"),
]
_RAW = ("\x1b", "\x07", "\x00", "\x08", "\x9b", "\r")


def _nasty_report(text: str) -> Report:
    return Report([
        TargetResult(f"m.py::{text}", dims={"B": 5},
                     diagnostics=[Diagnostic("reshape-jumble", "error", f"message {text}",
                                             hint=f"hint {text}", file="m.py", line=3,
                                             module=text, op="Tensor.view")]),
        TargetResult("m.py::Broken", error=f"ValueError: {text}"),
    ])


@pytest.mark.parametrize("text, shown", NASTY)
@pytest.mark.parametrize("fmt", ["text", "html", "svg"])
def test_control_characters_are_escaped_in_painted_formats(text, shown, fmt):
    from shapetrace.render import EXPORTERS

    out = EXPORTERS[fmt].export(_nasty_report(text))
    if fmt == "text":
        assert not any(c in out for c in _RAW), repr(out)
        assert shown in out
    elif fmt == "svg":
        ET.fromstring(out)  # well-formed XML
        assert not any(c in out for c in _RAW)
    else:
        assert not any(c in out for c in _RAW)


@pytest.mark.parametrize("text, shown", NASTY)
def test_control_characters_are_escaped_on_a_terminal(text, shown):
    import io

    from shapetrace.render import make_console, print_report

    buffer = io.StringIO()
    print_report(_nasty_report(text), console=make_console(color=True, width=100, file=buffer))
    out = buffer.getvalue()
    assert "\x1b]" not in out and "\x07" not in out and "\x1b[31mred" not in out
    assert "\r" not in out and "\x00" not in out and "\x9b" not in out


@pytest.mark.parametrize("where", ["exception-message", "module-dict-key"])
def test_control_characters_from_user_code_are_escaped(capsys, tmp_path, where):
    evil = "\\x1b[31mevil\\x1b]8;;x\\x07"
    raising = f"raise ValueError('{evil}')" if where == "exception-message" else "pass"
    model = write(tmp_path / "evil.py", f"""\
        import torch.nn as nn


        class Evil(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                {raising}
                self.blocks = nn.ModuleDict({{'{evil}': nn.Linear(n_embd, n_embd)}})

            def forward(self, x):
                return self.blocks['{evil}'](x)
        """)
    code, out, err = run(capsys, f"{model}::Evil", "--format", "svg", "--fake")
    ET.fromstring(out)
    assert not any(c in out + err for c in _RAW)
    if where == "exception-message":
        assert code == 2
        assert_one_line_error(err, "\\x1b[31mevil")
    else:
        assert code == 0, err
        code, out, err = run(capsys, f"{model}::Evil", "--fake")
        assert "\\x1b[31mevil" in out
        assert not any(c in out + err for c in _RAW)


# 8. Writes to stdout by the checked code cannot corrupt the report --------------------------------

@pytest.mark.parametrize("fmt", ["json"])
def test_user_writes_to_fd_1_go_to_stderr(tmp_path, fmt):
    model = write(tmp_path / "noisy_fd.py", """\
        import os
        import sys

        import torch.nn as nn

        os.write(1, b"IMPORT-FD1\\n")


        class Noisy(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                sys.__stdout__.write("INIT-DUNDER\\n")
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                os.write(1, b"FORWARD-FD1\\n")
                sys.__stdout__.write("FORWARD-DUNDER\\n")
                sys.__stdout__.flush()
                print("FORWARD-PRINT")
                return self.lin(x)
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "shapetrace", f"{model}::Noisy", "--fake",
                           "--format", fmt], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert strict_loads(proc.stdout)["targets"][0]["ok"]
    for marker in ("IMPORT-FD1", "INIT-DUNDER", "FORWARD-FD1", "FORWARD-DUNDER", "FORWARD-PRINT"):
        assert marker in proc.stderr
        assert marker not in proc.stdout
