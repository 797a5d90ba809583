"""A layer called inside a plain helper function that hands its result back (``return
fn(x)``, ``out = fn(x); return out``) whose caller drops what the helper returns: the layer's
weights cannot move the output, and weight-without-effect is placed at the caller's line, where
the fix goes, not inside the helper. A helper that drops the result itself keeps its own line."""

from __future__ import annotations

import inspect

import torch.nn as nn

import shapetrace as st


def with_context(fn, x):
    out = fn(x)
    return out


def run_layer(fn, x):
    return fn(x)


def run_and_forget(fn, x):
    fn(x)
    return x


class Base(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.head = nn.Linear(dim, dim)


class DroppedThroughHelper(Base):
    def forward(self, x):
        with_context(self.encoder, x)
        return self.head(x)


class DroppedThroughTwoHelpers(Base):
    def forward(self, x):
        run_layer(lambda h: with_context(self.encoder, h), x)
        return self.head(x)


class DroppedInsideHelper(Base):
    def forward(self, x):
        x = run_and_forget(self.encoder, x)
        return self.head(x)


class UsedThroughHelper(Base):
    def forward(self, x):
        h = with_context(self.encoder, x)
        return self.head(h)


def _line(cls_or_fn, text):
    lines, start = inspect.getsourcelines(cls_or_fn)
    return next(start + i for i, line in enumerate(lines) if text in line)


def _found(cls):
    result = st.check(cls, init={"dim": "C"}).targets[0]
    assert result.error is None
    return [d for d in result.diagnostics if d.rule == "weight-without-effect"]


def test_a_result_handed_back_by_a_helper_is_placed_where_the_caller_drops_it():
    (found,) = _found(DroppedThroughHelper)
    assert found.line == _line(DroppedThroughHelper, "with_context(self.encoder, x)")
    assert "hands back the result of `encoder`" in found.message


def test_a_helper_that_drops_the_result_itself_keeps_its_line():
    result = st.check(DroppedInsideHelper, init={"dim": "C"}).targets[0]
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert errors and all(d.line == _line(run_and_forget, "    fn(x)") for d in errors)


def test_a_result_used_through_a_helper_is_quiet():
    assert _found(UsedThroughHelper) == []


class SideOutputThroughHelper(Base):
    """The helper's result is bound in forward and returned only when asked: a side output."""

    def forward(self, x, return_encoded=False):
        encoded = with_context(self.encoder, x)
        y = self.head(x)
        if return_encoded:
            return y, encoded
        return y


def test_a_result_returned_only_when_asked_through_a_helper_is_quiet():
    assert _found(SideOutputThroughHelper) == []
