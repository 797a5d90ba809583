"""A class the project only builds one way, checked with nothing declared: when the forward fails
at the sizes shapetrace chose by name, and the project's own code passes literal values for
those arguments, the class is built with them and checked as used (a note names the call). A
failure those values meet too stays a finding.

The package below is ours: a tokens-to-token attention that narrows the width and adds its
values back (``v.squeeze(1)``), so that it only runs with one head, as its sibling builds it.
"""

from __future__ import annotations

import textwrap

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NARROW = '''
import torch
import torch.nn as nn


class NarrowAttention(nn.Module):
    """Attention from ``dim`` down to ``out_dim``, with the values added back: one head only."""

    def __init__(self, dim, out_dim=None, heads=8):
        super().__init__()
        self.heads, self.out_dim = heads, out_dim
        self.scale = (out_dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * out_dim)
        self.proj = nn.Linear(out_dim, out_dim)

    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.out_dim).permute(2, 0, 3, 1, 4)
        weights = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        y = self.proj((weights @ v).transpose(1, 2).reshape(B, N, self.out_dim))
        return v.squeeze(1) + y


class WideScaled(nn.Module):
    """The same, scaled by the input's width rather than by what q.k sums over."""

    def __init__(self, dim, out_dim=None, heads=8):
        super().__init__()
        self.heads, self.out_dim = heads, out_dim
        self.scale = (dim // heads) ** -0.5  # BUG
        self.qkv = nn.Linear(dim, 3 * out_dim)

    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.out_dim).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return v.squeeze(1) + (weights @ v).transpose(1, 2).reshape(B, N, self.out_dim)


class Broken(nn.Module):
    """Fails whatever it is built with: its gain is one wider than a head."""

    def __init__(self, dim, out_dim=None, heads=8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * out_dim)
        self.gain = nn.Parameter(torch.ones(heads, out_dim + 1))

    def forward(self, x):
        B, N, _ = x.shape
        return self.qkv(x).reshape(B, N, 3, self.heads, -1)[:, :, 0] * self.gain
'''

SHRINK = '''
import torch.nn as nn

from .narrow import Broken, NarrowAttention, WideScaled


class Shrink(nn.Module):
    def __init__(self, channels=3, token_dim=32):
        super().__init__()
        self.first = NarrowAttention(channels * 9, out_dim=token_dim, heads=1)
        self.second = WideScaled(channels * 9, out_dim=token_dim, heads=1)
        self.third = Broken(channels * 9, out_dim=token_dim, heads=1)

    def forward(self, x):
        return self.first(x) + self.second(x) + self.third(x)
'''


@pytest.fixture
def package(tmp_path):
    root = tmp_path / "tokens"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "narrow.py").write_text(textwrap.dedent(NARROW))
    (root / "shrink.py").write_text(textwrap.dedent(SHRINK))
    return root


def _line(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _target(report: dict, name: str) -> dict:
    return next(t for t in report["targets"] if t["target"].endswith("::" + name))


def test_one_head_attention_is_checked_as_its_sibling_builds_it(capsys, package):
    code, report = cli_json(capsys, str(package / "narrow.py"))
    target = _target(report, "NarrowAttention")
    assert target["error"] is None
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert any("heads=1 as shrink.py:10 passes it" in n and "out_dim=32 as shrink.py:10" in n
               and "the forward failed at Tensor.reshape" in n and "--init" in n
               for n in target["notes"]), target["notes"]


def test_a_wrong_scale_is_found_at_the_values_the_project_uses(capsys, package):
    code, report = cli_json(capsys, str(package / "narrow.py"))
    target = _target(report, "WideScaled")
    found = [(d["rule"], d["line"]) for d in target["diagnostics"] if d["severity"] == "error"]
    assert found == [("attention-scale", _line(package / "narrow.py", "# BUG"))]
    assert code == 1


def test_a_failure_the_projects_values_meet_too_stays_a_finding(capsys, package):
    code, report = cli_json(capsys, str(package / "narrow.py"))
    target = _target(report, "Broken")
    found = [(d["rule"], d["line"]) for d in target["diagnostics"] if d["severity"] == "error"]
    assert found == [("op-failed", _line(package / "narrow.py", "* self.gain"))]
    assert not any("as shrink.py" in n for n in target.get("notes", ()))


def test_the_reading_is_only_offered_when_the_failure_names_a_chosen_value(package):
    from shapetrace.drive.passed_read import PassedValues
    from shapetrace.drive.plan import Request, make_plan
    from shapetrace.base.dims import Dims
    import importlib
    import sys

    sys.path.insert(0, str(package.parent))
    try:
        narrow = importlib.import_module("tokens.narrow")
        plan = make_plan(Request(narrow.NarrowAttention, Dims(), "NarrowAttention"))
        guess = next(g for g in plan.guesses if isinstance(g, PassedValues))

        class Op:
            op, inputs = "Tensor.reshape", ()
            error = ("RuntimeError", "shape '[5, 7, 3, 11, 143]' is invalid for input of size 15015")

        class Failed:
            raised = RuntimeError("failed")
            failed_op = Op()

        heads = plan.init["heads"]
        assert heads != 1 and str(heads) in Op.error[1]
        assert guess.read_by(Failed(), plan)
        (other,) = guess.others(plan, Failed())
        assert (other.init["heads"], other.init["out_dim"]) == (1, 32)
        Op.error = ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x4 and 6x8)")
        assert not guess.read_by(Failed(), plan)
    finally:
        sys.path.remove(str(package.parent))
        for name in [n for n in sys.modules if n == "tokens" or n.startswith("tokens.")]:
            del sys.modules[name]
