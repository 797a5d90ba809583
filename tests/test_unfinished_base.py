"""A base class whose forward is left to its subclasses, or a forward that guards what it is
handed with a NotImplementedError under an if, is not a module left unwritten: a
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


class GuardedForward(nn.Module):
    """A forward written for a packed sequence, refusing anything else with a guard."""

    def __init__(self, dim):
        super().__init__()
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, x):
        if not isinstance(x, nn.utils.rnn.PackedSequence):
            raise NotImplementedError("only packed sequences")
        return self.rnn(x)[0]


def test_a_guard_raising_not_implemented_is_no_unwritten_forward():
    result = st.check(GuardedForward, init={"dim": "C"}).targets[0]
    assert not [d for d in result.diagnostics if d.rule == "not-implemented"]
    assert result.error is not None and "own check refused" in result.error


def test_a_bare_not_implemented_forward_is_still_unwritten():
    class Bare(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            raise NotImplementedError

    result = st.check(Bare, init={"dim": "C"}).targets[0]
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == ["not-implemented"]
