"""A constructor that keeps positional arguments given as ``*args`` (``Transpose(*dims)``) gets
none from shapetrace: when its forward then fails, the missing arguments are the cause, not the
code; a target error that names how the project's own code builds the class. A constructor that
only hands ``*args`` on to its base keeps its findings."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st


class Transpose(nn.Module):
    def __init__(self, *dims, contiguous=False):
        super().__init__()
        self.dims, self.contiguous = dims, contiguous

    def forward(self, x):
        out = x.transpose(*self.dims)
        return out.contiguous() if self.contiguous else out


class Owner(nn.Module):
    """Builds the transpose as the project means it; its own forward needs a value never given."""

    def __init__(self, width, table):
        super().__init__()
        self.norm = nn.Sequential(Transpose(1, 2), nn.BatchNorm1d(width), Transpose(1, 2))
        self.table = table

    def forward(self, x):
        return self.norm(x) + self.table.lookup(x)


class Base(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)


class HandsOn(Base):
    """*args only handed on to the base; its forward has a real bug (a wrong width)."""

    def __init__(self, width, *args):
        super().__init__(width, *args)
        self.out = nn.Linear(2 * width, width)

    def forward(self, x):
        return self.out(self.proj(x))


def test_kept_varargs_left_empty_are_a_target_error_naming_the_project_s_call():
    result = st.check(Transpose).targets[0]
    assert result.error is not None and "*dims" in result.error
    assert "shapetrace.check(Transpose(1, 2))" in result.error
    assert not result.diagnostics


def test_varargs_only_handed_on_keep_the_finding():
    result = st.check(HandsOn, init={"width": "C"}).targets[0]
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["op-failed"]
