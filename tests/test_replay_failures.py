"""A class built and called by its own code whose check fails there (a package its forward
imports is not installed) is a target error that says so, never shapetrace's internal error;
a forward that imports a package not installed is the machine's, not a finding."""

from __future__ import annotations

import types

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.drive import check as check_module
from shapetrace.drive import replay
from shapetrace.drive.owncalls import Captured
from shapetrace.report.results import TargetResult


class Projection(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class ImportsInForward(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        from shapetrace_absent_kernels import fused_norm  # not installed anywhere

        return fused_norm(self.proj(x))


def test_a_failed_check_at_the_code_s_own_sizes_is_returned_as_it_failed(monkeypatch):
    failed = TargetResult("m.py::Projection", error="it needs the package 'zeta', which is not installed")
    assert failed.skips is None  # a run that failed before any check was set up
    monkeypatch.setattr(check_module, "check_target", lambda *a, **k: failed)
    model = Projection(6)
    captured = Captured(model, (torch.randn(2, 3, 6),), {}, {"dim": 6}, ("m.py", 9), "its __main__ block")
    job = types.SimpleNamespace(dims={}, causal=None)
    target = types.SimpleNamespace(display="m.py::Projection")
    result = replay._at_own_sizes(target, job, captured, list(captured.args), None, None)
    assert result is failed and "zeta" in result.error


def test_a_forward_that_imports_a_package_not_installed_is_a_target_error():
    result = st.check(ImportsInForward, init={"dim": "C"}, inputs=["x=B,T,C"]).targets[0]
    assert result.error is not None and "shapetrace_absent_kernels" in result.error
    assert "not installed" in result.error
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]


class OlderEinopsCall(nn.Module):
    """Calls an installed package's module (einops) with a keyword its version does not take."""

    def __init__(self, dim: int):
        super().__init__()
        from einops.layers.torch import Rearrange

        self.proj = nn.Linear(dim, dim)
        self.fold = Rearrange("b t c -> b c t")

    def forward(self, x):
        return self.fold(self.proj(x), cache_key=x.shape[1])


class WrongTorchKeyword(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x, scale=2.0)  # a student's mistake: nn.Linear takes no such keyword


def test_an_installed_package_of_another_version_is_a_target_error_naming_it():
    result = st.check(OlderEinopsCall, init={"dim": "C"}, inputs=["x=B,T,C"]).targets[0]
    assert result.error is not None and "'einops'" in result.error and "'cache_key'" in result.error
    assert not result.diagnostics


def test_a_keyword_torch_does_not_take_stays_the_code_s_failure():
    result = st.check(WrongTorchKeyword, init={"dim": "C"}, inputs=["x=B,T,C"]).targets[0]
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
