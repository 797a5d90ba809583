"""Shared test options. Golden files change only when asked: ``pytest --update-golden``."""

from __future__ import annotations

import pytest

#: modules the tests check or run as data (a course's graders, a project's own tests): never
#: collected as this project's tests
collect_ignore_glob = ["data/*"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ from the current output")


@pytest.fixture
def update_golden(request) -> bool:
    """True when the run was started with ``--update-golden``."""
    return request.config.getoption("--update-golden")
