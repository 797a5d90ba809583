"""A base class whose forward is left to its subclasses is not a module left unwritten: a
target error that names the subclass to check, never a not-implemented finding; the same forward
with no subclass writing its own is still not-implemented."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st


class Base(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        pass


class Written(Base):
    def forward(self, x):
        return self.proj(x)


class Starter(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        pass


def test_a_base_whose_subclass_writes_forward_is_a_target_error_naming_it():
    result = st.check(Base, init={"dim": "C"}).targets[0]
    assert result.error is not None and "check Written instead" in result.error
    assert not [d for d in result.diagnostics if d.rule == "not-implemented"]


def test_a_forward_no_subclass_writes_is_still_not_implemented():
    result = st.check(Starter, init={"dim": "C"}).targets[0]
    assert result.error is None
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["not-implemented"]
