"""Axis names worked out once per distinct run (``naming.memo``): a block traced again as it
ran before gets the same names and findings as when it was named afresh, and any change that
naming reads (a shape, a line, a size named) names it afresh."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace
from models_basic import B, C, MHA, T, H
from shapetrace.naming import memo, provenance


def _run(model, x, **kwargs):
    with shapetrace.trace(model, **kwargs) as t:
        model(x)
    t.diagnostics  # named here
    return t


def _described(t) -> tuple:
    shapes = [(r.op, [t.shape_of(m) for m in r.inputs], [t.shape_of(m) for m in r.outputs])
              for r in t.records]
    return shapes, sorted((d.rule, d.line, d.message) for d in t.diagnostics)


class _Jumbled(nn.Module):
    """Reshapes (B, T, C) straight to (B, H, T, d): the tokens mix across heads."""

    def __init__(self, n_embd: int = C, n_head: int = H):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.reshape(b, self.n_head, t, c // self.n_head)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return (att @ v).transpose(1, 2).reshape(b, t, c)


def _counting(monkeypatch) -> list:
    calls = []
    walk = provenance.annotate

    def counted(trace):
        calls.append(len(trace.records))
        return walk(trace)

    monkeypatch.setattr(memo, "annotate", counted)
    memo._NAMED.clear()
    return calls


def test_a_run_traced_again_is_named_once_and_described_the_same(monkeypatch):
    calls = _counting(monkeypatch)
    model = MHA().eval()
    first = _described(_run(model, torch.randn(B, T, C)))
    second = _described(_run(model, torch.randn(B, T, C)))  # other values, the same run
    assert len(calls) == 1
    assert second == first
    assert any("(B, H, T, T)" in shapes for _, _, shapes in first[0] if shapes)


def test_a_finding_is_the_same_when_the_names_are_reused(monkeypatch):
    calls = _counting(monkeypatch)
    model = _Jumbled().eval()
    first = _described(_run(model, torch.randn(B, T, C)))
    second = _described(_run(model, torch.randn(B, T, C)))
    assert len(calls) == 1
    assert [rule for rule, _, _ in first[1]].count("reshape-jumble") == 1
    assert second == first


def test_another_shape_or_another_line_is_named_afresh(monkeypatch):
    calls = _counting(monkeypatch)
    model = MHA().eval()
    _run(model, torch.randn(B, T, C))
    shorter = _run(model, torch.randn(B, T - 2, C))  # T - 2 is no name's size
    assert len(calls) == 2
    assert not any("(B, H, T, T)" in t for r in shorter.records
                   for t in map(shorter.shape_of, r.outputs))
    other = _Jumbled().eval()  # the same kind of ops on other lines
    _run(other, torch.randn(B, T, C))
    assert len(calls) == 3


class _EitherLine(nn.Module):
    """The same ops in the same forward, the first one called on one of two lines."""

    def __init__(self):
        super().__init__()
        self.upper = True

    def forward(self, x):
        if self.upper:
            y = x.relu()
        else:
            y = x.relu()
        return y * 2


def test_the_same_code_on_another_line_is_named_afresh(monkeypatch):
    # The sites' code objects are compared, not hashed: two runs that differ only in the line
    # of one op within one function have signatures of equal hashes, and are still two runs.
    calls = _counting(monkeypatch)
    model = _EitherLine().eval()
    x = torch.randn(B, T, C)
    first = _run(model, x)
    model.upper = False
    second = _run(model, x)
    assert len(calls) == 2
    assert first.records[0].where[1] != second.records[0].where[1]
    upper, lower = (memo.signature(t.records, t) for t in (first, second))
    assert hash(lower) == hash(upper) and lower != upper
    model.upper = True
    _run(model, x)
    assert len(calls) == 2  # the first run's names again


def test_sizes_named_otherwise_are_named_afresh(monkeypatch):
    calls = _counting(monkeypatch)
    model = MHA(n_embd=64, n_head=4).eval()
    x = torch.randn(2, 10, 64)
    plain = _run(model, x)
    named = _run(model, x, dims={"B": 2, "T": 10, "C": 64, "H": 4})
    assert len(calls) == 2
    last = named.records[-1]
    assert named.shape_of(last.outputs[0]) == "(B, T, C)"
    assert plain.shape_of(plain.records[-1].outputs[0]) != "(B, T, C)"


def test_arguments_that_are_lists_still_find_the_run_again(monkeypatch):
    calls = _counting(monkeypatch)

    class Permuting(nn.Module):
        def forward(self, x):
            return x.permute([0, 2, 1]).softmax(-1)

    model = Permuting()
    first = _described(_run(model, torch.randn(B, T, C)))
    second = _described(_run(model, torch.randn(B, T, C)))
    assert len(calls) == 1 and second == first


def test_only_the_latest_runs_are_kept(monkeypatch):
    calls = _counting(monkeypatch)
    model = MHA().eval()
    lengths = range(2, 3 + memo.KEPT)
    for n in lengths:
        _run(model, torch.randn(B, n, C))
    assert len(memo._NAMED) == memo.KEPT
    _run(model, torch.randn(B, lengths[-1], C))  # the latest: found
    assert len(calls) == len(lengths)
    _run(model, torch.randn(B, lengths[0], C))  # the oldest: dropped, named again
    assert len(calls) == len(lengths) + 1


def test_a_run_traced_again_hands_the_rules_the_kept_signature(monkeypatch):
    calls = _counting(monkeypatch)
    model = _Jumbled().eval()
    first = _run(model, torch.randn(B, T, C))
    second = _run(model, torch.randn(B, T, C))
    assert len(calls) == 1
    # the very key kept with the names: the findings' key holding it is found at once
    assert second.run_structure[0] is first.run_structure[0]
    assert _described(second) == _described(first)
    shorter = _run(model, torch.randn(B, T - 2, C))  # named afresh: a key of its own
    assert shorter.run_structure[0] is not first.run_structure[0]
