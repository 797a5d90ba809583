"""Modules for the causal-intent tests: buggy causal modules whose bug removes the mask (so the
intent must come from somewhere else), their fixes, and bidirectional modules in several styles.

A buggy module marks the line where the leak is found with ``# leak: <case>``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def heads(x, n_head):
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)


def merge(y):
    B, H, T, d = y.shape
    return y.transpose(1, 2).reshape(B, T, H * d)


class _Projections(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def qkv(self, x):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        return heads(q, self.n_head), heads(k, self.n_head), heads(v, self.n_head)


# --- intent from the class name ------------------------------------------------------------


class CausalSelfAttention(_Projections):
    """nanoGPT's attention with the mask forgotten."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        att = F.softmax(att, dim=-1)  # leak: causal-name-no-mask
        return self.c_proj(merge(att @ v))


class CausalSelfAttentionMasked(_Projections):
    def forward(self, x):
        q, k, v = self.qkv(x)
        T = x.shape[1]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = F.softmax(att.masked_fill(future, float("-inf")), dim=-1)
        return self.c_proj(merge(att @ v))


class CausalSDPA(_Projections):
    """nanoGPT's flash path with is_causal=False."""

    def __init__(self, n_embd, n_head, is_causal_flag=False):
        super().__init__(n_embd, n_head)
        self.flag = is_causal_flag

    def forward(self, x):
        q, k, v = self.qkv(x)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=self.flag)  # leak: sdpa-is-causal-false
        return self.c_proj(merge(y))


class MiniGPT(nn.Module):
    """A GPT-named model whose attention (named plainly) has no mask."""

    def __init__(self, vocab_size, n_embd, n_head, block_size, masked=False):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.head = nn.Linear(n_embd, vocab_size)
        self.masked = masked

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        mask = nn.Transformer.generate_square_subsequent_mask(T) if self.masked else None
        y, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)  # leak: gpt-name
        return self.head(x + y)


class AutoRegressiveConv(nn.Module):
    """A convolution over time padded on both sides (should be left only)."""

    def __init__(self, d_model, left_only=False):
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, kernel_size=3)
        self.left_only = left_only

    def forward(self, x):
        h = x.transpose(1, 2)
        h = F.pad(h, (2, 0) if self.left_only else (1, 1))  # leak: autoregressive-conv
        return self.conv(h).transpose(1, 2)


# --- intent from a flag ----------------------------------------------------------------------


class FlaggedAttention(_Projections):
    """Takes causal=True and stores it, but the forward never applies a mask."""

    def __init__(self, n_embd, n_head, causal=True, apply=False):
        super().__init__(n_embd, n_head)
        self.causal = causal
        self.apply_mask = apply

    def forward(self, x):
        q, k, v = self.qkv(x)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal and self.apply_mask)  # leak: causal-flag
        return self.c_proj(merge(y))


class StoredFlagOnly(_Projections):
    """A ``causal=True`` default stored and never read: the attention is bidirectional by what
    it does (a denoiser over a whole sequence), so the flag declares nothing."""

    def __init__(self, n_embd, n_head, causal=True):
        super().__init__(n_embd, n_head)
        self.causal = causal

    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.c_proj(merge(F.scaled_dot_product_attention(q, k, v)))


class AutoregressiveArgument(_Projections):
    """``autoregressive=True`` is a constructor argument only: it is not stored."""

    def __init__(self, n_embd, n_head, autoregressive=True, apply=False):
        super().__init__(n_embd, n_head)
        self.mask_it = autoregressive and apply

    def forward(self, x):
        q, k, v = self.qkv(x)
        att = (q @ k.transpose(-2, -1)) * k.shape[-1] ** -0.5
        if self.mask_it:
            T = x.shape[1]
            att = att + torch.full((T, T), float("-inf")).triu(1)
        return self.c_proj(merge(att.softmax(-1) @ v))  # leak: autoregressive-argument


class Head(_Projections):
    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.c_proj(merge(F.scaled_dot_product_attention(q, k, v)))  # leak: submodule-name


class CausalHead(Head):
    pass


class Block(nn.Module):
    """A plain-named block around an attention called causal."""

    def __init__(self, n_embd, n_head, fixed=False):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttentionMasked(n_embd, n_head) if fixed else CausalHead(n_embd, n_head)

    def forward(self, x):
        return x + self.attn(self.ln(x))


# --- causal by construction: linear attention with running sums ------------------------------


class LinearAttention(nn.Module):
    """Causal linear attention (Katharopoulos et al.): running sums over T of k v^T and of k."""

    def __init__(self, d_model, n_head, leaky_normaliser=False, bidirectional=False):
        super().__init__()
        self.h = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.leaky = leaky_normaliser
        self.bidirectional = bidirectional

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.reshape(B, T, self.h, C // self.h) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = F.elu(q) + 1, F.elu(k) + 1
        if self.bidirectional:
            kv = torch.einsum("bthd,bthe->bhde", k, v)
            z = k.sum(dim=1)
            num = torch.einsum("bthd,bhde->bthe", q, kv)
            den = torch.einsum("bthd,bhd->bth", q, z).unsqueeze(-1)
            return (num / den).reshape(B, T, C)
        kv = torch.einsum("bthd,bthe->bthde", k, v).cumsum(dim=1)
        z = k.sum(dim=1, keepdim=True) if self.leaky else k.cumsum(dim=1)  # leak: linear-normaliser
        num = torch.einsum("bthd,bthde->bthe", q, kv)
        den = (q * z).sum(-1, keepdim=True)
        return (num / den).reshape(B, T, C)


# --- bidirectional, whatever the name says --------------------------------------------------------


class TransformerDecoder(nn.Module):
    """A non-autoregressive decoder (DETR / FastPitch style): queries attend to each other freely."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2 * d_model,
                                                dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class LengthRegulatedDecoder(nn.Module):
    """Running sums of per-token durations (a (B, T) float tensor, FastPitch's length regulator)
    are positions, not causal evidence: the model is bidirectional."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.duration = nn.Linear(d_model, 1)
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        ends = F.softplus(self.duration(x)).squeeze(-1).cumsum(dim=1)
        y, _ = self.attn(x, x, x, need_weights=False)
        return y * ends.unsqueeze(-1)


class Attention(_Projections):
    """Says it is not causal."""

    def __init__(self, n_embd, n_head, causal=False):
        super().__init__(n_embd, n_head)
        self.causal = causal

    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.c_proj(merge(F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)))


class GroupedEncoder(nn.Module):
    """torch's encoder over tokens of several groups, each attending within its own group: a
    block-diagonal mask, not a causal one (torch's encoder tests whether it is, with a triangle
    of its own)."""

    def __init__(self, d_model, nhead):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2 * d_model, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)

    def forward(self, x):
        B, T, C = x.shape
        group = torch.arange(T, device=x.device) // 3
        hidden = group[:, None] != group[None, :]
        return self.encoder(x, mask=hidden)


class SquareSubsequentEncoder(GroupedEncoder):
    """The causal mask made by torch's own helper at the user's call: evidence."""

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.encoder(x, mask=mask)
