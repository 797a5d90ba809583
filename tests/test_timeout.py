"""--timeout: a target still running after the deadline is stopped and reported as a target
error (exit 2, one line naming where it was), and everything around it is left as it was."""

from __future__ import annotations

import json
import signal
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from shapetrace._cli import main
from shapetrace._deadline import TimedOut, deadline, supported

from test_cli import assert_one_line_error

HEADER = """\
import time
import torch
import torch.nn as nn


class Endless(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.lin = nn.Linear(n_embd, n_embd)

    def forward(self, x):
"""
FORWARDS = {
    "plain-loop": """\
        while True:
            x = self.lin(x) * 0.5
""",
    "loop-swallowing-every-exception": """\
        while True:
            try:
                x = self.lin(x) * 0.5
            except BaseException:
                pass
""",
    "sleeping": """\
        while True:
            time.sleep(0.01)
""",
    "keyboard-interrupt-caught": """\
        while True:
            try:
                time.sleep(0.01)
            except KeyboardInterrupt:
                continue
""",
}

pytestmark = pytest.mark.skipif(not supported(), reason="needs a timer signal in the main thread")


def _write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.mark.parametrize("style", list(FORWARDS))
def test_endless_forward_is_stopped(capsys, tmp_path, monkeypatch, style):
    monkeypatch.chdir(tmp_path)
    source = HEADER + FORWARDS[style]
    _write(tmp_path / "endless.py", source)
    code = main(["endless.py", "--timeout", "1", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 2
    (target,) = json.loads(out)["targets"]
    assert target["error"].startswith("stopped after 1 s (--timeout) while running it")
    loop_line = source.splitlines().index("        while True:") + 1
    lines = {n for n, text in enumerate(source.splitlines(), 1) if n >= loop_line}
    assert any(f"endless.py:{n}" in target["error"] for n in lines), target["error"]
    assert_one_line_error(err, "endless.py::Endless", "--timeout")


def test_endless_import_is_stopped(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "hangs.py", """\
        import torch.nn as nn
        while True:
            pass
        class Never(nn.Module):
            pass
        """)
    assert main(["hangs.py::Never", "--timeout", "1"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "stopped after 1 s", "importing")
    assert "hangs.py:2" in err or "hangs.py:3" in err, err


def test_other_targets_still_run(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = HEADER + FORWARDS["plain-loop"] + textwrap.dedent("""\


        class Quick(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
        """)
    _write(tmp_path / "two.py", source)
    assert main(["two.py", "--timeout", "1", "--format", "json"]) == 2
    targets = {t["target"]: t for t in json.loads(capsys.readouterr().out)["targets"]}
    assert targets["two.py::Endless"]["error"].startswith("stopped after 1 s")
    assert targets["two.py::Quick"]["error"] is None and targets["two.py::Quick"]["ok"]


def test_a_quick_target_is_unaffected(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "quick.py", HEADER + "        return self.lin(x)\n")
    assert main(["quick.py", "--timeout", "30", "--format", "json"]) == 0
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["ok"] and target["error"] is None and target["trace"]


@pytest.mark.parametrize("text", ["0", "-1", "soon", "inf", "nan"])
def test_bad_timeout_is_a_usage_error(capsys, text):
    with pytest.raises(SystemExit) as exc:
        main(["x.py", "--timeout", text])
    assert exc.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_deadline_leaves_signal_handler_tracer_and_grad_mode_as_they_were():
    handler = signal.getsignal(signal.SIGALRM)
    tracer = sys.gettrace()
    with pytest.raises(TimedOut):
        with deadline(0.2):
            while True:
                try:
                    torch.ones(3).sum()
                except BaseException:  # noqa: BLE001 - the user's code swallowing everything
                    pass
    assert signal.getsignal(signal.SIGALRM) is handler
    assert sys.gettrace() is tracer
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert torch.is_grad_enabled()


def test_no_deadline_when_none():
    with deadline(None):
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
