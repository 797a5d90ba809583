"""Input shapes read from the docstrings of a module's own code (``drive.docshapes``)."""

from __future__ import annotations

import pytest
import torch.nn as nn

from resolved import result
from shapetrace.base.specs import InputSpec, parse_input
from shapetrace.drive.docshapes import documented_input
from shapetrace.drive.infer import infer_inputs

DIMS = {"B": 5, "T": 7, "S": 11, "H": 3, "d": 4, "C": 12, "V": 19, "L": 23}
DATA = "tests/data/documented/attention.py"


def _read(doc: str, name: str, named: InputSpec | None = None):
    def forward(self, *args):
        pass

    forward.__doc__ = doc
    return documented_input(name, forward, None, DIMS, named)


@pytest.mark.parametrize("doc, name, dims", [
    ("query (torch.Tensor): Query tensor (#batch, time1, size).", "query", ("B", "T", "C")),
    ("key (torch.Tensor): Key tensor (#batch, time2, size).", "key", ("B", "S", "C")),
    ("Args:\n    pos_emb (torch.Tensor): Positional embedding tensor\n        (#batch, 2*time1-1, size).",
     "pos_emb", ("B", "2*T-1", "C")),
    ("- **x** (batch, time, dim): Tensor containing the sequence", "x", ("B", "T", "C")),
    (":param torch.Tensor tgt: (batch, time1, size)", "tgt", ("B", "T", "C")),
    ("x: Tensor of shape [B, N, D]", "x", ("B", "T", "C")),
    ("key: (S, N, E) where S is the source length, N the batch size", "key", ("S", "B", "C")),
    ("x (Tensor): (seq_len, batch_size, n_heads, d)", "x", ("T", "B", "H", "d")),
    ("x (Tensor): Input (batch, channels, time).", "x", ("B", "C", "T")),
    ("pos: coordinates (batch, n, 3)", "pos", ("B", "T", 3)),
    ("c (Tensor): conditioning (batch_size, channel)", "c", ("B", "C")),
    ("V    : 4d tensor (batch_size, h, seq_len, d_V)", "V", ("B", "H", "T", "d")),
])
def test_a_documented_shape_is_read_in_the_words_code_uses(doc, name, dims):
    assert _read(doc, name) == InputSpec(name, dims)


@pytest.mark.parametrize("doc, name", [
    ("x (torch.tensor): input tensor of shape [batch, seq_len]", "x"),  # token ids or values?
    ("x (LongTensor): (batch, time, size)", "x"),
    ("att_ws (Tensor): Batch of attention weights (B, H, T_max_out, T_max_in).", "att_ws"),
    ("attn_weights: (num_heads, batch_size, seq_len, seq_len)", "attn_weights"),
    ("imgs: images (N, 3, H, W)", "imgs"),
    ("x: features (B, C, height, width)", "x"),
    ("points (Tensor): (batch, num_points, 3)", "points"),  # a word for no size
    ("x (Tensor): the input, reshaped as x.view(B, T, C)", "x"),  # a call, not a shape
    ("lengths (Tensor): (batch, 1) lengths of each sequence", "lengths"),
    ("y (Tensor): a sequence (batch, time, size)", "x"),  # another parameter's line
    ("the sequence x, of shape (batch, time, size)", "x"),  # not the line of x
])
def test_nothing_is_read_where_the_words_do_not_say_it_plainly(doc, name):
    assert _read(doc, name) is None


def test_a_name_read_as_another_sequence_keeps_its_own_length():
    named = InputSpec("encoder_hidden_states", ("B", "S", "C"))
    doc = "encoder_hidden_states (Tensor): (batch, seq_len, embed_dim)"
    assert _read(doc, "encoder_hidden_states", named) is named
    assert _read("", "encoder_hidden_states", named) is named


def test_masks_and_token_ids_are_left_to_their_own_readings():
    assert _read("mask (Tensor): (batch, time1, time2)", "mask") is None
    assert _read("idx (Tensor): (batch, time, size)", "idx") is None


def test_the_class_docstring_is_read_after_the_forwards():
    class Documented(nn.Module):
        """A block.

        input:
            - **x** (batch, time, dim): the sequence
            - **pos** (batch, time, 3): each token's coordinates
        """

        def forward(self, x, pos):
            return x

    assert [str(s) for s in infer_inputs(Documented, DIMS)] == ["x=B,T,C", "pos=B,T,3"]


def test_a_size_may_be_a_sum_of_products():
    spec = parse_input("pos_emb=B,2*T-1,C", DIMS)
    assert spec.dims == ("B", "2*T-1", "C") and spec.shape(DIMS) == (5, 13, 12)
    with pytest.raises(Exception, match="sum of them"):
        parse_input("pos_emb=B,2*T-,C", DIMS)


def test_a_documented_time_first_rotary_runs_as_its_docstring_says():
    checked = result(DATA, "TimeFirstRotary")
    assert checked.error is None and checked.diagnostics == []
    first = next(r for r in checked.trace.records if r.op == "Tensor.mul")
    assert len(first.inputs[0].shape) == 4  # (T, B, H, d), not a guessed (B, T, C)


def test_the_same_rotary_undocumented_is_read_otherwise():
    checked = result(DATA, "UndocumentedTimeFirstRotary")
    first = next(r for r in checked.trace.records if r.op == "Tensor.mul")
    assert len(first.inputs[0].shape) == 3


@pytest.mark.parametrize("cls", ["RelativePositionAttention", "PointAttention"])
def test_documented_attentions_are_checked_clean(cls):
    checked = result(DATA, cls)
    assert checked.error is None and checked.diagnostics == []


def test_a_documented_attention_scaled_by_its_width_is_found_at_its_line():
    checked = result(DATA, "RelativePositionAttentionScaledByWidth")
    found = [(d.rule, d.line) for d in checked.diagnostics if d.severity == "error"]
    assert found == [("attention-scale", 58)]


def test_a_sum_that_is_not_positive_at_the_probe_sizes_is_refused():
    with pytest.raises(Exception, match="a size must be positive"):
        parse_input("x=B,T-7,C", DIMS).shape(DIMS)


def test_a_verdict_on_a_layout_read_from_a_docstring_is_at_most_a_warning():
    """The docstring says time first and the code reads the batch first: positions counted by
    what the docstring calls the batch are said as an assumption, never an error."""
    checked = result(DATA, "StaleDocstringPositions")
    assert checked.error is None
    assert not [d for d in checked.diagnostics if d.severity == "error"], checked.diagnostics
    warned = [d for d in checked.diagnostics if d.rule == "position-axis"]
    assert warned and "as the docstring gives it" in warned[0].message


def test_a_width_the_docstring_states_is_no_guess():
    """``(batch_size, seq_len, d_model)``: the last axis is the model's width, as stated, so a
    scale judged on it stands as an error."""
    checked = result(DATA, "WeightMatricesScaledByLength")
    found = [(d.rule, d.severity) for d in checked.diagnostics]
    assert ("attention-scale", "error") in found, checked.diagnostics


class GraphHeads(nn.Module):
    """Attention over the vertices of a graph.

    K: number of attention heads
    d: dimension of each attention outputs
    """

    def __init__(self, K, d):
        super().__init__()
        self.K, self.d = K, d
        self.qkv = nn.Linear(K * d, 3 * K * d)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (t.view(B, T, self.K, self.d).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        weights = (q @ k.transpose(-2, -1) / self.d ** 0.5).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(B, T, self.K * self.d)


def test_a_constructor_argument_the_docstring_names_is_that_size():
    import shapetrace as st
    from shapetrace.base.dims import Dims
    from shapetrace.drive.docshapes import documented_size

    assert documented_size(GraphHeads, "K") == ("H", "the number of heads (H)")
    assert documented_size(GraphHeads, "x") is None
    checked = st.check(GraphHeads).targets[0]
    assert checked.error is None and checked.ok, (checked.error, checked.diagnostics)
    assert checked.dims["H"] == Dims()["H"]  # K heads of d features each
    assert any(n.startswith("K read as the number of heads (H), as the class's docstring says")
               for n in checked.notes), checked.notes
