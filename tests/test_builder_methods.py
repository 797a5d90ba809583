"""A submodule built by a builder method of the class (``self.self_attn =
self.build_self_attention(...)``, a subclass's override found first) is read as the class that
method returns: what that class's forward says of its inputs' layout (``tgt_len, bsz, _ =
query.size()``) is the layer's, so a time-first layer is not fed a batch-first guess and
reported as mixing samples."""

from __future__ import annotations

import torch
from torch import nn

import shapetrace as st
from shapetrace.analysis.handed import submodule_class


class SeqFirstAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key_padding_mask=None):
        tgt_len, bsz, embed_dim = query.size()
        q = self.q_proj(query) * self.head_dim ** -0.5
        k, v = self.k_proj(query), self.v_proj(query)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        w = torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        out = torch.bmm(w, v).transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        return self.out_proj(out), w


class EncoderLayer(nn.Module):
    def __init__(self, embedding_dim, num_attention_heads):
        super().__init__()
        self.self_attn = self.build_self_attention(embedding_dim, num_attention_heads)
        self.norm = nn.LayerNorm(embedding_dim)
        self.fc = nn.Linear(embedding_dim, embedding_dim)

    def build_self_attention(self, embed_dim, heads):
        return SeqFirstAttention(embed_dim, heads)

    def forward(self, x, self_attn_padding_mask=None):
        residual = x
        x, attn = self.self_attn(query=x, key_padding_mask=self_attn_padding_mask)
        x = self.norm(residual + x)
        return x + self.fc(x), attn


class BatchFirstAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, query):
        bsz, tgt_len, _ = query.shape
        return self.attn(query, query, query, need_weights=False)[0], None


class EitherLayer(EncoderLayer):
    """Builds one of two attentions: the builder says nothing of which."""

    def __init__(self, embedding_dim, num_attention_heads, seq_first=True):
        self.seq_first = seq_first
        super().__init__(embedding_dim, num_attention_heads)

    def build_self_attention(self, embed_dim, heads):
        if self.seq_first:
            return SeqFirstAttention(embed_dim, heads)
        return BatchFirstAttention(embed_dim, heads)


class LeakyLayer(EncoderLayer):
    """Mixes the batch: every sample gets the mean over the batch axis added (time-first)."""

    def forward(self, x, self_attn_padding_mask=None):
        x, attn = super().forward(x, self_attn_padding_mask)
        return x + x.mean(dim=1, keepdim=True), attn


def test_the_builder_method_names_the_submodule_class():
    assert submodule_class(EncoderLayer, "self_attn") is SeqFirstAttention


def test_a_builder_returning_two_classes_names_none():
    assert submodule_class(EitherLayer, "self_attn") is None


def _errors(result):
    return [d.rule for d in result.diagnostics if d.severity == "error"]


def test_a_time_first_layer_built_by_a_builder_is_checked_clean():
    result = st.check(EncoderLayer, init={"embedding_dim": "C", "num_attention_heads": "H"}).targets[0]
    assert result.error is None
    assert _errors(result) == []


def test_a_time_first_layer_that_mixes_its_batch_is_still_found():
    result = st.check(LeakyLayer, init={"embedding_dim": "C", "num_attention_heads": "H"}).targets[0]
    assert result.error is None
    assert "batch-leak" in _errors(result)
