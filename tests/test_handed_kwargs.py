"""A module that hands ``**kwargs`` on to a layer that reads an argument of its own left None
(tests/data/handed_kwargs/layers.py): the forward failing on that None is a value its callers
pass (a target error naming it), not a finding against the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILE = Path(__file__).parent / "data" / "handed_kwargs" / "layers.py"


def test_a_none_a_wrapper_never_hands_on_asks_for_the_value(capsys):
    code, report = cli_json(capsys, f"{FILE}::Wrapped")
    (target,) = report["targets"]
    assert not [d for d in target["diagnostics"] if d["rule"] == "op-failed"], target["diagnostics"]
    assert target["error"] is not None
    assert "pad_mask left None: a value its callers pass" in target["error"], target["error"]


def test_the_wrapper_asks_as_the_layer_itself_asks(capsys):
    """Built alone, the layer's own ``pad_mask=None`` is left None as well: the same ask."""
    code, report = cli_json(capsys, f"{FILE}::MaskedFeedForward")
    (target,) = report["targets"]
    assert not [d for d in target["diagnostics"] if d["rule"] == "op-failed"]
    assert "pad_mask left None: a value its callers pass" in (target["error"] or "")
