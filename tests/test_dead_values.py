"""discarded-result by dataflow, and noncontiguous-view told from a prediction.

The modules in tests/data/dead_values/ are written for these tests: buggy ones (``BUG`` and a
``# BUG`` line; ``SEVERITY`` where the finding is a warning) must be found once at that line,
correct ones in other styles must say nothing at any severity.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from style_corpus import bug_line, check, load, modules, show

import shapetrace as st
from shapetrace.analysis.facts import analyse

DATA = Path(__file__).with_name("data") / "dead_values"
FILES = [DATA / "attention.py", DATA / "stacks.py"]  # views.py: the noncontiguous-view cases
CORRECT = list(modules(FILES, "correct", "dead"))
BUGGY = list(modules(FILES, "buggy", "dead"))
ATTENTION = load(DATA / "attention.py", "dead_attention")
STACKS = load(DATA / "stacks.py", "dead_stacks")
VIEWS = load(DATA / "views.py", "dead_views")


def _found(report, rule="discarded-result"):
    return [d for d in report.diagnostics if d.rule == rule]


@pytest.mark.parametrize("cls", CORRECT)
def test_correct_module_says_nothing(cls):
    report = check(cls)
    assert report.targets[0].error is None, report.targets[0].error
    assert [d for d in report.diagnostics if d.severity in ("error", "warning")] == [], \
        show(report)


@pytest.mark.parametrize("cls", BUGGY)
def test_dead_value_found_once_at_its_line(cls):
    report = check(cls, behaviour=False)
    assert report.targets[0].error is None, report.targets[0].error
    found = _found(report)
    assert len(found) == 1, show(report)
    assert found[0].line == bug_line(cls), show(report)
    assert found[0].severity == getattr(cls, "SEVERITY", "error"), show(report)
    assert found[0].hint, show(report)
    others = [d for d in report.diagnostics if d is not found[0] and d.severity != "info"]
    assert others == [], show(report)


@pytest.mark.parametrize("cls, words", [
    pytest.param(ATTENTION.QueryProjectionOverwritten,
                 ["the projection self.query(x) is computed and never used",
                  "q is assigned again at line", "(q = x.view(",
                  "the new q is made from x, which self.query(x) read"],
                 id="projection-overwritten"),
    pytest.param(ATTENTION.KeyProjectionReshapedThenLost,
                 ["the projection self.key(x)", "it becomes k at line",
                  "and k is assigned again at line"],
                 id="projection-reshaped-then-lost"),
    pytest.param(ATTENTION.SoftmaxReplacedByDropout,
                 ["the softmax scores.softmax(dim=-1) is computed and never used",
                  "weights = self.drop(scores)", "made from scores"],
                 id="softmax-replaced"),
    pytest.param(ATTENTION.ValuesPieceUnused,
                 ["piece 2 of the projection self.qkv(x).split(C, dim=-1)",
                  "v is never read afterwards"],
                 id="values-piece-unused"),
    pytest.param(ATTENTION.ValuesMadeFromKeys,
                 ["v is made from k at line", "(v = _split(k, self.heads)), not from v",
                  "piece 2 of the projection"],
                 id="values-made-from-keys"),
    pytest.param(ATTENTION.EinopsQueriesFromInput,
                 ["the projection self.to_q(x)", "q = rearrange(x,"],
                 id="einops-projection-overwritten"),
    pytest.param(ATTENTION.ScoresComputedTwice, ["torch.einsum(", "scores is assigned again"],
                 id="scores-computed-twice"),
    pytest.param(STACKS.CachingStackOutputDropped,
                 ["the output of block(h) is computed and never used",
                  "out is never read afterwards"],
                 id="block-output-dropped"),
    pytest.param(STACKS.ResidualStackCalledAlone,
                 ["the output of layer(h)", "its result is dropped"],
                 id="block-called-alone"),
    pytest.param(ATTENTION.OutputProjectionNeverCalled,
                 ["self.mix = nn.Linear(width, width) is never used",
                  "forward never calls self.mix", "(C, C) and (C,)"],
                 id="layer-never-called"),
])
def test_message_says_what_was_computed_and_what_replaced_it(cls, words):
    [found] = _found(check(cls, behaviour=False))
    assert [w for w in words if w not in found.message] == [], found.message


def test_hint_of_a_call_on_its_own_line_assigns_it():
    [found] = _found(check(STACKS.ResidualStackCalledAlone, behaviour=False))
    assert "h = layer(h)" in found.hint


def test_a_layer_never_called_is_a_warning_and_the_run_passes():
    report = check(ATTENTION.OutputProjectionNeverCalled)
    [found] = _found(report)
    assert (found.severity, found.op, found.module) == \
        ("warning", "Linear", "OutputProjectionNeverCalled")
    assert report.ok, show(report)


def test_a_norm_never_called_is_a_warning_at_its_definition_and_one_called_is_quiet():
    report = check(ATTENTION.ContextNormNeverCalled, behaviour=False)
    [found] = _found(report)
    assert (found.severity, found.op, found.line) == \
        ("warning", "LayerNorm", bug_line(ATTENTION.ContextNormNeverCalled))
    assert "self.norm_context" in found.message
    assert _found(check(ATTENTION.ContextNormCalled, behaviour=False)) == []


def test_one_line_run_for_every_block_is_one_finding():
    """The loop calls two blocks at one line: both outputs dropped there, one finding."""
    report = check(STACKS.CachingStackOutputDropped, behaviour=False)
    [found] = _found(report)
    assert (found.count, found.modules) == (1, ["CachingStackOutputDropped"]), show(report)


def _traced(model, *inputs, **options):
    with st.trace(model, **options) as t:
        model(*inputs)
    return t


def test_the_model_output_dropped_by_the_caller_is_no_finding():
    """``with st.trace(model): model(x)`` keeps nothing of the output: it is the run's output,
    not a value the model threw away."""
    model = ATTENTION.SeparateProjections(16, 4)
    t = _traced(model, torch.randn(2, 5, 16))
    assert _found(t) == [], show(t)


def test_found_at_the_users_own_sizes():
    model = ATTENTION.QueryProjectionOverwritten(16, 4)
    t = _traced(model, torch.randn(2, 5, 16), dims={"B": 2, "T": 5, "C": 16, "H": 4})
    [found] = _found(t)
    assert found.line == bug_line(ATTENTION.QueryProjectionOverwritten)


class _Peeks(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, how):
        y = self.lin(x)
        if how == "item":
            y.sum().item()
        elif how == "shape":
            _ = y.shape
        return x * 2


@pytest.mark.parametrize("how, dead", [("item", False), ("shape", True)])
def test_a_value_read_by_untraced_code_is_live_and_its_shape_is_not_a_read(how, dead):
    model = _Peeks()
    with st.trace(model) as t:
        model(torch.randn(3, 4), how)
    analysis = analyse(t)
    linear = next(r for r in t.records if r.op == "F.linear")
    assert analysis.liveness.dead(linear.outputs[0]) is dead


def test_a_write_into_a_buffer_keeps_what_it_writes_alive():
    model = STACKS.CacheWrittenInPlace(16, 4)
    with st.trace(model) as t:
        model(torch.randn(2, 5, 16))
    analysis = analyse(t)
    kv = next(r for r in t.records if r.op == "F.linear")
    assert not analysis.liveness.dead(kv.outputs[0])


def _line_of(cls, tag: str) -> int:
    lines, start = inspect.getsourcelines(cls)
    return next(start + i for i, text in enumerate(lines) if text.rstrip().endswith(tag))


@pytest.mark.parametrize("cls, tag, fake, severity, predicted", [
    pytest.param(VIEWS.EinsumThenView, "# <- einsum-view", False, "error", False,
                 id="einsum-real-raises"),
    pytest.param(VIEWS.EinsumThenView, "# <- einsum-view", True, "warning", True,
                 id="einsum-fake-predicted"),
    pytest.param(VIEWS.TransposeThenView, "# <- transpose-view", True, "error", False,
                 id="transpose-fake-every-backend"),
    pytest.param(VIEWS.TransposeThenView, "# <- transpose-view", False, "error", False,
                 id="transpose-real"),
])
def test_noncontiguous_view_is_an_error_only_for_what_happened(cls, tag, fake, severity,
                                                               predicted):
    report = check(cls, fake=fake, behaviour=False)
    [found] = _found(report, "noncontiguous-view")
    assert (found.line, found.severity) == (_line_of(cls, tag), severity), show(report)
    assert ("Predicted, not seen" in found.message) is predicted, found.message
    assert ".reshape(" in found.hint



def test_a_dead_value_made_from_sizes_alone_is_a_note_not_an_error():
    """``pos = torch.arange(T).unsqueeze(0)`` left unused once a learned table was taken out:
    nothing the module computes is lost."""
    cls = load(DATA / "positions.py", "dead").PositionsLeftUnused
    report = st.check(cls, inputs=["x=B,T,C"], behaviour=False)
    found = _found(report)
    assert report.ok and [d.severity for d in found] == ["info"], show(report)
    assert "made from sizes alone" in found[0].message
