"""Shared test options. Golden files change only when asked: ``pytest --update-golden``."""

from __future__ import annotations

import pytest


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ from the current output")


@pytest.fixture
def update_golden(request) -> bool:
    """True when the run was started with ``--update-golden``."""
    return request.config.getoption("--update-golden")
