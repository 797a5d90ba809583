"""What pyproject.toml declares is what the tests run on."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
DECLARED = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["test"]]


@pytest.mark.parametrize("text", DECLARED, ids=[Requirement(t).name for t in DECLARED])
def test_declared_range_holds_the_installed_version(text):
    requirement = Requirement(text)
    installed = Version(version(requirement.name))
    assert requirement.specifier.contains(installed, prereleases=True), (text, str(installed))


@pytest.mark.parametrize("text", PROJECT["dependencies"],
                         ids=[Requirement(t).name for t in PROJECT["dependencies"]])
def test_runtime_dependencies_declare_a_tested_lower_bound(text):
    """No range reaching below what the suite runs on: a lower bound of the same major version,
    not above the installed one."""
    requirement = Requirement(text)
    lows = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    assert lows, f"{text} declares no lower bound"
    installed = Version(version(requirement.name))
    assert (installed.major, installed.minor) >= (lows[0].major, lows[0].minor)
    assert installed.major == lows[0].major, f"{text}: tests run on {installed}"
