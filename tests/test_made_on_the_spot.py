"""Attention written as the formula's capitals, its scores module made on the spot and called
(``ScaledDotProductAttention()(Q, K, V, attn_mask)``), the mask given a heads axis and tiled
(``attn_mask.unsqueeze(1).repeat(1, n_heads, 1, 1)``) before it is handed on: ``Q``, ``K`` and
``V`` are the queries, keys and values; the mask is read where the module made on the spot
uses it (a condition of ``masked_fill_``), never as a timestep for the axis it is given. Both
modules are checked and clean; a softmax over the queries' axis behind them is found."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

import shapetrace as st


class ScaledDotProductAttention(nn.Module):
    axis = -1

    def forward(self, Q, K, V, attn_mask):
        scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(Q.size(-1))
        scores.masked_fill_(attn_mask, -1e9)
        attn = nn.Softmax(dim=self.axis)(scores)
        return torch.matmul(attn, V), attn


class QueriesAxis(ScaledDotProductAttention):
    axis = -2


class MultiHeadAttention(nn.Module):
    scores = ScaledDotProductAttention

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.fc = nn.Linear(d_model, d_model, bias=False)

    def forward(self, input_Q, input_K, input_V, attn_mask):
        b = input_Q.size(0)
        Q = self.W_Q(input_Q).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        K = self.W_K(input_K).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        V = self.W_V(input_V).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        attn_mask = attn_mask.unsqueeze(1).repeat(1, self.heads, 1, 1)
        context, attn = ScaledDotProductAttention()(Q, K, V, attn_mask)
        return self.fc(context.transpose(1, 2).reshape(b, -1, self.heads * self.d_k)), attn


class QueriesAxisHeads(MultiHeadAttention):
    def forward(self, input_Q, input_K, input_V, attn_mask):
        b = input_Q.size(0)
        Q = self.W_Q(input_Q).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        K = self.W_K(input_K).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        V = self.W_V(input_V).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        attn_mask = attn_mask.unsqueeze(1).repeat(1, self.heads, 1, 1)
        context, attn = QueriesAxis()(Q, K, V, attn_mask)
        return self.fc(context.transpose(1, 2).reshape(b, -1, self.heads * self.d_k)), attn


def _errors(result):
    return [d for d in result.diagnostics if d.severity == "error"]


def test_the_formulas_capitals_are_queries_keys_and_values():
    result = st.check(ScaledDotProductAttention).targets[0]
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics


def test_a_mask_tiled_over_heads_for_a_module_made_on_the_spot_runs_clean():
    result = st.check(MultiHeadAttention).targets[0]
    assert result.error is None, result.error
    assert not _errors(result), result.diagnostics
    assert any("attn_mask=B,T,T:mask-drop" in n for n in result.notes), result.notes


def test_a_softmax_over_the_queries_behind_them_is_found():
    result = st.check(QueriesAxisHeads).targets[0]
    assert result.error is None, result.error
    assert "softmax-axis" in {d.rule for d in _errors(result)}, result.diagnostics
