import pytest


@pytest.fixture(scope="module")
def sizes():
    return {"channels": 3, "side": 12, "patch": 4, "width": 10}
