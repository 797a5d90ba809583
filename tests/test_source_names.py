"""Names from the code that made the sizes: at the user's own sizes, where two names share a
size (H = d = 8), the view, reshape and split arguments in the source say which axis is which;
where the source says nothing, the number stays, and a weight's axis is never the batch or the
sequence."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import shapetrace as st


class HeadsEqualHeadSize(nn.Module):
    """Eight heads of eight: H = d = 8 at the user's sizes, an output width equal to T."""

    def __init__(self, n_embd: int = 64, n_head: int = 8, out: int = 16):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, out)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = F.softmax(q @ k.transpose(-2, -1) / (k.size(-1) ** 0.5), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


def _shapes(t, op: str) -> list[str]:
    return [t.shape_of(r.outputs[0]) for r in t.records if r.op == op]


def test_the_code_names_axes_two_names_share_a_size():
    model = HeadsEqualHeadSize()
    with st.trace(model, dims={"B": 2, "T": 16, "C": 64, "H": 8}) as t:
        model(torch.randn(2, 16, 64))
    assert _shapes(t, "Tensor.view") == ["(B, T, H, d)"] * 3
    assert _shapes(t, "Tensor.transpose")[0] == "(B, H, T, d)"


def test_the_code_does_not_name_an_axis_it_does_not_state():
    class Literal(nn.Module):
        def forward(self, x):
            B, T, C = x.shape
            return x.view(B, T, 8, 8)

    with st.trace(Literal(), dims={"B": 2, "T": 16, "C": 64, "H": 8}) as t:
        Literal()(torch.randn(2, 16, 64))
    assert _shapes(t, "Tensor.view") == ["(B, T, 8, 8)"]


def test_an_output_width_equal_to_the_sequence_is_not_the_sequence():
    model = HeadsEqualHeadSize(out=16)
    with st.trace(model, dims={"B": 2, "T": 16, "C": 64, "H": 8}) as t:
        model(torch.randn(2, 16, 64))
    assert _shapes(t, "F.linear")[-1] == "(B, T, 16)"
    weights = [t.shape_of(r.inputs[1]) for r in t.records if r.op == "F.linear"]
    assert "T" not in weights[-1] and "B" not in weights[-1]


@pytest.mark.parametrize("h", [2, 4])
def test_source_names_agree_with_size_names(h):
    """Where every size names one dim the names come from sizes, and the source agrees."""
    model = HeadsEqualHeadSize(n_embd=8 * h, n_head=h)
    with st.trace(model, dims={"B": 3, "T": 5, "C": 8 * h, "H": h}) as t:
        model(torch.randn(3, 5, 8 * h))
    assert _shapes(t, "Tensor.view") == ["(B, T, H, d)"] * 3
    assert "dim-collision" not in [d.rule for d in t.diagnostics]


class SplitByWidth(nn.Module):
    def __init__(self, n_embd: int = 16, n_head: int = 2):
        super().__init__()
        self.n_embd, self.n_head = n_embd, n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        return q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)


def test_a_split_by_the_width_names_its_pieces_width():
    """T = C = 16: the sequence prints as 16, the pieces' width as C, from split(self.n_embd)."""
    model = SplitByWidth()
    with st.trace(model, dims={"B": 2, "T": 16, "C": 16, "H": 2}) as t:
        model(torch.randn(2, 16, 16))
    assert _shapes(t, "Tensor.split") == ["(2, 16, C)"]  # one record, three outputs: the first
    assert [t.shape_of(m) for r in t.records if r.op == "Tensor.split" for m in r.outputs] \
        == ["(2, 16, C)"] * 3
    assert _shapes(t, "Tensor.transpose") == ["(B, H, T, d)"]


def test_a_split_by_a_number_keeps_the_number():
    class ByNumber(SplitByWidth):
        def forward(self, x):
            return self.c_attn(x).split(16, dim=-1)[0]

    model = ByNumber()
    with st.trace(model, dims={"B": 2, "T": 16, "C": 16, "H": 2}) as t:
        model(torch.randn(2, 16, 16))
    assert _shapes(t, "Tensor.split") == ["(2, 16, 16)"]
