"""``timeout = SECONDS`` in shapetrace.toml / [tool.shapetrace]: global and per target, checked
like every other key, and carried to the jobs (where ``--timeout`` overrides it)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shapetrace.drive.config import load_config
from shapetrace.base.errors import UsageError
from shapetrace.drive.jobs import jobs_from_config


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


CONFIG = """\
timeout = 30

[[targets]]
target = "a.py"

[[targets]]
target = "b.py"
timeout = 2.5
"""


def test_global_and_per_target_timeouts(tmp_path):
    config = load_config(write(tmp_path / "shapetrace.toml", CONFIG))
    assert config.timeout == 30
    a, b = config.targets
    assert (a.timeout, b.timeout) == (None, 2.5)
    assert (config.timeout_for(a), config.timeout_for(b)) == (30, 2.5)


def test_no_timeout_by_default(tmp_path):
    config = load_config(write(tmp_path / "shapetrace.toml", '[[targets]]\ntarget = "a.py"\n'))
    assert config.timeout is None and config.timeout_for(config.targets[0]) is None
    (job,) = jobs_from_config(config)
    assert job.timeout is None


def test_jobs_carry_the_config_timeout_and_where_it_was_set(tmp_path):
    config = load_config(write(tmp_path / "pyproject.toml",
                               "[tool.shapetrace]\n" + CONFIG.replace("[[targets]]",
                                                                      "[[tool.shapetrace.targets]]")))
    a, b = jobs_from_config(config)
    assert (a.timeout, b.timeout) == (30, 2.5)
    assert a.timeout_source == b.timeout_source == "timeout in pyproject.toml"


def test_command_line_timeout_overrides_every_target(tmp_path):
    config = load_config(write(tmp_path / "shapetrace.toml", CONFIG))
    a, b = jobs_from_config(config, timeout=7)
    assert (a.timeout, b.timeout) == (7, 7)
    assert a.timeout_source == "--timeout"


@pytest.mark.parametrize("text, fragment", [
    pytest.param("timeout = 0\n", "timeout must be a positive number of seconds, got 0", id="zero"),
    pytest.param("timeout = -5\n", "timeout must be a positive number of seconds, got -5",
                 id="negative"),
    pytest.param("timeout = '10'\n", "timeout must be a positive number of seconds, got '10'",
                 id="string"),
    pytest.param("timeout = true\n", "timeout must be a positive number of seconds, got True",
                 id="bool"),
    pytest.param("timeout = inf\n", "timeout must be a positive number of seconds, got inf",
                 id="infinite"),
    pytest.param("timeout = nan\n", "timeout must be a positive number of seconds, got nan",
                 id="nan"),
    pytest.param('[[targets]]\ntarget = "a.py"\ntimeout = 0\n',
                 "targets[0].timeout must be a positive number of seconds", id="per-target"),
    pytest.param('[[targets]]\ntarget = "a.py"\ntimout = 5\n',
                 "targets[0].timout is not a known key; did you mean 'timeout'?", id="misspelt"),
])
def test_bad_timeout_is_one_line(tmp_path, text, fragment):
    path = write(tmp_path / "shapetrace.toml", text)
    with pytest.raises(UsageError) as exc_info:
        load_config(path)
    message = str(exc_info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ") and fragment in message, message
