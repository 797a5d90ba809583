"""--timeout and ``timeout = SECONDS`` in the config: a target still running after the deadline is
stopped and reported as a target error (exit 2, one line naming where it was; in the pytest plugin
its own item fails), and everything around it is left as it was."""

from __future__ import annotations

import json
import signal
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from shapetrace.frontends.cli import main
from shapetrace.drive.deadline import TimedOut, deadline, stopped, supported

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
    # The deadline is long enough that the quick target meets it on a loaded machine too.
    assert main(["two.py", "--timeout", "8", "--format", "json"]) == 2
    targets = {t["target"]: t for t in json.loads(capsys.readouterr().out)["targets"]}
    assert targets["two.py::Endless"]["error"].startswith("stopped after 8 s")
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


def _busy(seconds: float) -> None:
    import time as clock

    end = clock.monotonic() + seconds
    while clock.monotonic() < end:
        pass


def test_a_deadline_passing_inside_a_gc_callback_is_raised_after_it(monkeypatch):
    """An exception raised inside a garbage-collector callback (hypothesis installs one) is
    printed as "ignored" and lost: the deadline waits until the collection is over."""
    import gc

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def slow(phase, info):
        if phase == "start":
            _busy(0.4)

    gc.callbacks.append(slow)
    try:
        with pytest.raises(TimedOut):
            with deadline(0.1):
                gc.collect()
                _busy(5)  # stopped here, at the next repeat after the collection
    finally:
        gc.callbacks.remove(slow)
    assert not unraisable
    assert slow not in gc.callbacks and len(gc.callbacks) == len(set(map(id, gc.callbacks)))


def test_deadline_gives_an_earlier_timer_back_what_it_had_left():
    """A timer already set (pytest-timeout's, an enclosing deadline) runs on afterwards."""
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with deadline(5):
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not fired


def test_nested_deadlines_keep_the_outer_one():
    with pytest.raises(TimedOut) as exc:
        with deadline(0.5):
            with deadline(30):
                pass
            while True:
                torch.ones(3).sum()
    assert exc.value.seconds == 0.5


# --- timeout = SECONDS in the config file -------------------------------------------------------

QUICK = HEADER + "        return self.lin(x)\n"
ENDLESS = HEADER + FORWARDS["plain-loop"]


def _project(tmp_path: Path, config: str, **files: str) -> str:
    for name, text in files.items():
        _write(tmp_path / f"{name}.py", text)
    return _write(tmp_path / "shapetrace.toml", config)


@pytest.mark.parametrize("config", [
    pytest.param('timeout = 1\n[[targets]]\ntarget = "endless.py"\n', id="global"),
    pytest.param('[[targets]]\ntarget = "endless.py"\ntimeout = 1\n', id="per-target"),
    pytest.param('timeout = 600\n[[targets]]\ntarget = "endless.py"\ntimeout = 1\n',
                 id="per-target-overrides-global"),
])
def test_config_timeout_stops_a_target(capsys, tmp_path, monkeypatch, config):
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, config, endless=ENDLESS)
    assert main(["--config", "shapetrace.toml", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    (target,) = json.loads(out)["targets"]
    assert target["error"].startswith("stopped after 1 s (timeout in shapetrace.toml) while "
                                      "running it, still running at endless.py:")
    assert_one_line_error(err, "endless.py::Endless", "timeout in shapetrace.toml")


def test_config_timeout_is_per_target(capsys, tmp_path, monkeypatch):
    """Only the target with the short timeout is stopped; the other has none of its own and
    the global one is generous."""
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, 'timeout = 120\n[[targets]]\ntarget = "endless.py"\ntimeout = 1\n'
                       '[[targets]]\ntarget = "quick.py"\n', endless=ENDLESS, quick=QUICK)
    assert main(["--config", "shapetrace.toml", "--format", "json"]) == 2
    targets = {t["target"]: t for t in json.loads(capsys.readouterr().out)["targets"]}
    assert targets["endless.py::Endless"]["error"].startswith("stopped after 1 s")
    assert targets["quick.py::Endless"]["error"] is None and targets["quick.py::Endless"]["ok"]


def test_command_line_timeout_overrides_the_config(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, 'timeout = 600\n[[targets]]\ntarget = "endless.py"\n', endless=ENDLESS)
    assert main(["--config", "shapetrace.toml", "--timeout", "1", "--format", "json"]) == 2
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"].startswith("stopped after 1 s (--timeout) while running it")


def test_config_timeout_stops_an_endless_import(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, '[[targets]]\ntarget = "hangs.py::Never"\ntimeout = 1\n',
             hangs="import torch.nn as nn\nwhile True:\n    pass\n")
    assert main(["--config", "shapetrace.toml"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "stopped after 1 s (timeout in shapetrace.toml) while importing it",
                          "hangs.py:")


PLUGIN_PROJECT = """\
[tool.shapetrace]
timeout = 120

[[tool.shapetrace.targets]]
target = "student/endless.py"
timeout = 1

[[tool.shapetrace.targets]]
target = "student/quick.py"
"""


def test_plugin_fails_the_target_that_runs_too_long(tmp_path):
    """Under pytest, the slow target fails its own item with one line; the quick one passes."""
    import os
    import subprocess

    student = tmp_path / "student"
    student.mkdir()
    _write(student / "endless.py", ENDLESS)
    _write(student / "quick.py", QUICK)
    (tmp_path / "pyproject.toml").write_text(PLUGIN_PROJECT)
    repo = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "1 failed, 1 passed" in out, out
    assert "PASSED shapetrace::student/quick.py::Endless" in out, out
    failed = [line for line in out.splitlines()
              if line.startswith("FAILED shapetrace::student/endless.py::Endless")]
    assert len(failed) == 1, out
    assert "stopped after 1 s (timeout in pyproject.toml) while running it, still running at " \
           "student/endless.py:" in out, out



def test_a_stop_inside_generated_code_names_the_users_file():
    """A deadline that fires inside code with no file (a dataclass's generated ``__init__``,
    called while recording the user's loop) names the user's line around it, not ``<string>``."""
    namespace = {"TimedOut": TimedOut}
    exec(compile("def generated():\n    raise TimedOut(1)\n", "<string>", "exec"), namespace)

    def users_loop():
        namespace["generated"]()  # the user's line

    with pytest.raises(TimedOut) as exc:
        users_loop()
    message = stopped(exc.value, "running it")
    assert "<string>" not in message
    assert message.startswith("stopped after 1 s (--timeout) while running it, still running at ")
    assert "test_timeout.py:" in message
