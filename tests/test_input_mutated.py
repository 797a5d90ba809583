"""input-mutated (ST016): a forward that writes into a tensor the caller passed in as data."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import shapetrace as st
from shapetrace.base.names import passed_to_fill
from shapetrace.behaviour.mutation import rewritten


class _Base(nn.Module):
    def __init__(self, d_model, block_size):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(block_size, d_model) * 0.02)
        self.proj = nn.Linear(d_model, d_model)


class PlusEquals(_Base):
    def forward(self, x):
        x += self.pos[: x.shape[1]]  # mutates
        return self.proj(x)


class AddUnderscore(_Base):
    def forward(self, x):
        x.add_(self.pos[: x.shape[1]])  # mutates
        return self.proj(x)


class SetItem(_Base):
    def forward(self, x):
        x[:, 0] = 0  # mutates
        return self.proj(x)


class ThroughAView(_Base):
    def forward(self, x):
        B, T, C = x.shape
        flat = x.view(B * T, C)
        flat.mul_(math.sqrt(C))  # mutates
        return self.proj(x)


class MaskInverted(_Base):
    def forward(self, x, mask):
        mask.logical_not_()  # mutates
        return self.proj(x.masked_fill(mask.unsqueeze(-1), 0.0))


class ReluInPlaceOnInput(_Base):
    def forward(self, x):
        h = F.relu(x, inplace=True)  # mutates
        return self.proj(h)


BUGGY = [
    pytest.param(PlusEquals, ["x=B,T,C"], "x = x + self.pos[: x.shape[1]]", id="plus-equals"),
    pytest.param(AddUnderscore, ["x=B,T,C"], "x = x.add(self.pos[: x.shape[1]])", id="add-underscore"),
    pytest.param(SetItem, ["x=B,T,C"], "x = x.clone()", id="setitem"),
    pytest.param(ThroughAView, ["x=B,T,C"], "flat = flat.mul(math.sqrt(C))", id="through-a-view"),
    pytest.param(MaskInverted, ["x=B,T,C", "mask=B,T:bool"], "mask = mask.logical_not()", id="bool-mask"),
    pytest.param(ReluInPlaceOnInput, ["x=B,T,C"], None, id="relu-inplace"),
]


def _line(cls) -> int:
    import inspect

    lines, start = inspect.getsourcelines(cls.forward)
    return start + next(i for i, text in enumerate(lines) if text.rstrip().endswith("# mutates"))


@pytest.mark.parametrize(("cls", "inputs", "fix"), BUGGY)
def test_mutation_is_reported_at_the_op(cls, inputs, fix):
    result = st.check(cls, init={"d_model": "C", "block_size": "L"}, inputs=inputs).targets[0]
    found = [d for d in result.diagnostics if d.rule == "input-mutated"]
    assert len(found) == 1, [(d.rule, d.line) for d in result.diagnostics]
    diag = found[0]
    assert diag.severity == "error" and diag.code == "ST016"
    assert diag.line == _line(cls) and diag.file.endswith("test_input_mutated.py")
    assert f"`{inputs[-1].split('=')[0] if cls is MaskInverted else 'x'}`" in diag.message
    if fix:
        assert fix in diag.hint
    json.dumps(diag.to_json())


class OutOfPlace(_Base):
    def forward(self, x):
        x = x + self.pos[: x.shape[1]]
        return self.proj(x)


class CopiesFirst(_Base):
    def forward(self, x):
        x = x.clone()
        x[:, 0] = 0
        x += self.pos[: x.shape[1]]
        return self.proj(x)


class ContiguousCopy(_Base):
    def forward(self, x):
        h = x.transpose(0, 1).contiguous()  # a copy: writing into it is fine
        h.mul_(2.0)
        return self.proj(h.transpose(0, 1))


class ClampInRange(_Base):
    """An in-place op that changes no value: the caller's data is as it was."""

    def forward(self, x):
        x.clamp_(-1e4, 1e4)
        return self.proj(x)


class FillsKVCache(_Base):
    def forward(self, x, kv_cache):
        T = x.shape[1]
        kv_cache[:, :T] = self.proj(x)
        return kv_cache[:, :T] + x


class UpdatesState(_Base):
    """Linear-attention style recurrent state passed in to be updated."""

    def forward(self, x, state):
        state.add_(torch.einsum("btc,btd->bcd", x, x))
        return self.proj(x)


class WritesOutBuffer(_Base):
    def forward(self, x, scratch_tensor):
        torch.mul(x, 2.0, out=scratch_tensor)
        return self.proj(scratch_tensor)


class HiddenStatesOutOfPlace(_Base):
    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.proj(hidden_states)
        return hidden_states + residual


QUIET = [
    pytest.param(OutOfPlace, ["x=B,T,C"], id="out-of-place"),
    pytest.param(CopiesFirst, ["x=B,T,C"], id="clone-first"),
    pytest.param(ContiguousCopy, ["x=B,T,C"], id="contiguous-copy"),
    pytest.param(ClampInRange, ["x=B,T,C"], id="in-place-no-change"),
    pytest.param(FillsKVCache, ["x=B,T,C", "kv_cache=B,L,C"], id="kv-cache"),
    pytest.param(UpdatesState, ["x=B,T,C", "state=B,C,C"], id="state"),
    pytest.param(WritesOutBuffer, ["x=B,T,C", "scratch_tensor=B,T,C"], id="out-buffer"),
    pytest.param(HiddenStatesOutOfPlace, ["hidden_states=B,T,C"], id="hidden-states"),
]


@pytest.mark.parametrize(("cls", "inputs"), QUIET)
def test_no_finding_when_the_caller_data_is_kept_or_meant_to_be_filled(cls, inputs):
    result = st.check(cls, init={"d_model": "C", "block_size": "L"}, inputs=inputs).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.rule == "input-mutated"]


def test_check_on_a_given_tensor_reports_it():
    x = torch.randn(5, 7, 143)
    before = x.clone()
    result = st.check(PlusEquals(143, 23), inputs=[x]).targets[0]
    assert [d.rule for d in result.diagnostics] == ["input-mutated"]
    assert not torch.equal(x, before)  # the module really wrote into it: that is the finding
    assert result.notes == [] or all("internal" not in n for n in result.notes)


def test_silent_under_fake():
    report = st.check(PlusEquals, init={"d_model": "C", "block_size": "L"}, inputs=["x=B,T,C"], fake=True)
    result = report.targets[0]
    assert not [d for d in result.diagnostics if d.rule == "input-mutated"]
    assert "input-mutated" in result.skipped


def test_cli_reports_it(capsys, tmp_path, monkeypatch):
    from shapetrace.frontends.cli import main

    path = tmp_path / "student.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass AddPos(nn.Module):\n"
                    "    def __init__(self, d_model, block_size):\n        super().__init__()\n"
                    "        self.pos = nn.Parameter(torch.zeros(block_size, d_model) + 1)\n\n"
                    "    def forward(self, x):\n        x += self.pos[: x.shape[1]]\n        return x\n")
    monkeypatch.chdir(tmp_path)
    assert main(["student.py", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    (diag,) = [d for d in data["targets"][0]["diagnostics"] if d["rule"] == "input-mutated"]
    assert diag["line"] == 11 and diag["code"] == "ST016"


@pytest.mark.parametrize(("name", "position", "filled"), [
    ("x", 0, False), ("hidden_states", 0, False), ("mask", 1, False), ("valid_lens", 1, False),
    ("target", 1, False), ("hidden", 0, False), ("memory", 0, False), ("encoder_output", 1, False),
    ("encoder_hidden_states", 1, False),
    ("kv_cache", 1, True), ("layer_past", 1, True), ("past_key_values", 1, True), ("state", 1, True),
    ("out", 1, True), ("memory", 1, True), ("hidden", 1, True), ("cache", 1, True), ("hx", 1, True),
])
def test_filled_names(name, position, filled):
    """One vocabulary: a data name is data (``hidden`` or ``memory`` in first place too), a
    name whose words say cache, state or output is passed in to be filled."""
    assert passed_to_fill(name, position) is filled


@pytest.mark.parametrize(("segment", "fixed"), [
    ("x += self.pos", "x = x + self.pos"),
    ("x *= 2", "x = x * 2"),
    ("x.add_(y)", "x = x.add(y)"),
    ("x.masked_fill_(m, 0)", "x = x.masked_fill(m, 0)"),
    ("foo(x)", ""),
])
def test_rewritten_line(segment, fixed):
    assert rewritten(segment, "x") == fixed
