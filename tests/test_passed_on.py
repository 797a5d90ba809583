"""What a constructor or a forward passes on decides how it must be given: a kernel size a layer
inside indexes (``kernel_size[0]``) is given as sides, and a mask left at its default None is
given where a layer it is handed to reads it unguarded (``mask.repeat(...)``), even when code
further down tests it."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class ConvFeedForward(nn.Module):
    """Two convolutions over time, their kernels given as a pair."""

    def __init__(self, width, inner, kernel_size, dropout=0.0):
        super().__init__()
        self.up = nn.Conv1d(width, inner, kernel_size[0], padding=(kernel_size[0] - 1) // 2)
        self.down = nn.Conv1d(inner, width, kernel_size[1], padding=(kernel_size[1] - 1) // 2)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        h = self.down(torch.relu(self.up(x.transpose(1, 2)))).transpose(1, 2)
        return x + self.drop(h)


class ConvBlock(nn.Module):
    def __init__(self, d_model, n_head, d_inner, kernel_size, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head, dropout=dropout, batch_first=True)
        self.ffn = ConvFeedForward(d_model, d_inner, kernel_size, dropout=dropout)

    def forward(self, x):
        return self.ffn(x + self.attn(x, x, x, need_weights=False)[0])


class ScoresAttention(nn.Module):
    """Repeats the mask over heads unguarded; the scores test it."""

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.head = n_head, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def scores(self, q, k, mask=None):
        s = q @ k.transpose(-2, -1) / self.head ** 0.5
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        return s.softmax(dim=-1)

    def forward(self, x, mask=None):
        b, t, c = x.shape
        q, k, v = (y.view(b, t, self.n_head, self.head).permute(2, 0, 1, 3).reshape(self.n_head * b, t, self.head)
                   for y in self.qkv(x).chunk(3, dim=-1))  # heads first, as the mask is repeated
        mask = mask.repeat(self.n_head, 1, 1)
        w = self.scores(q, k, mask)
        return self.out((w @ v).view(self.n_head, b, t, self.head).permute(1, 2, 0, 3).reshape(b, t, c))


class MaskedLayer(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.attn = ScoresAttention(d_model, n_head)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, attn_mask=None):
        return x + self.attn(self.norm(x), mask=attn_mask)


def test_a_kernel_size_a_layer_inside_indexes_is_given_as_sides():
    result = st.check(ConvBlock).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any(n.startswith("kernel_size=(3, 3): as the number 3") for n in result.notes), result.notes


def test_a_mask_a_layer_inside_reads_unguarded_is_given():
    result = st.check(MaskedLayer).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    masks = [m for r in result.trace.records for m in r.inputs
             if m.src is None and m.dtype == torch.bool]
    assert masks, "the mask was not given"


class BatchFirstHeads(ScoresAttention):
    """Folds heads batch-first (sample-major) but repeats the mask heads-first: each sample's
    scores get another sample's mask."""

    def forward(self, x, mask=None):
        b, t, c = x.shape
        q, k, v = (y.view(b, t, self.n_head, self.head).transpose(1, 2).reshape(b * self.n_head, t, self.head)
                   for y in self.qkv(x).chunk(3, dim=-1))
        mask = mask.repeat(self.n_head, 1, 1)  # the bug: heads-first, against sample-major scores
        w = self.scores(q, k, mask)
        return self.out((w @ v).view(b, self.n_head, t, self.head).transpose(1, 2).reshape(b, t, c))


class MixedLayer(MaskedLayer):
    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.attn = BatchFirstHeads(d_model, n_head)


def test_a_mask_repeated_in_another_order_than_the_heads_mixes_the_batch():
    result = st.check(MixedLayer).targets[0]
    assert result.error is None, result.error
    leaks = [d for d in result.diagnostics if d.rule == "batch-leak"]
    assert leaks and BatchFirstHeads.forward.__code__.co_firstlineno + 4 in leaks[0].lines, result.diagnostics


class PaddedLayer(nn.Module):
    """Two masks of two shapes: the scores' (B, T, T), and one flag per position (B, T) that
    zeroes padded positions of the output."""

    def __init__(self, d_model, n_head):
        super().__init__()
        self.attn = ScoresAttention(d_model, n_head)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None, attn_mask=None):
        h = x + self.attn(self.norm(x), mask=attn_mask)
        return h.masked_fill(mask.unsqueeze(-1), 0.0)


def test_each_of_two_masks_is_read_in_the_shape_its_own_use_takes():
    result = st.check(PaddedLayer).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    masks = sorted(tuple(m.shape) for r in result.trace.records for m in r.inputs
                   if m.src is None and m.dtype == torch.bool)
    B, T = result.dims["B"], result.dims["T"]
    assert (B, T) in masks and (B, T, T) in masks, masks
