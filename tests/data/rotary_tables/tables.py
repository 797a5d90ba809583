"""Rotary attention handed its cos and sin tables, in the two layouts code uses: one row per
position ``(context_length, head_dim)`` that the code cuts and lifts itself, and tables already
lifted to ``(1, T, head_dim)``."""

import torch
import torch.nn as nn


def rope_tables(head_dim, context_length=64, base=10000.0):
    inverse = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.arange(context_length).float()[:, None] * inverse[None, :]
    angles = torch.cat([angles, angles], dim=1)  # (context_length, head_dim)
    return torch.cos(angles), torch.sin(angles)


def rotate_rows(x, cos, sin):
    """x: (B, H, T, d); cos, sin: one row per position."""
    length, half = x.shape[2], x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    cos = cos[:length, :].unsqueeze(0).unsqueeze(0)  # (1, 1, T, d)
    sin = sin[:length, :].unsqueeze(0).unsqueeze(0)
    return x * cos + turned * sin


def rotate_lifted(x, cos, sin):
    """x: (B, H, T, d); cos, sin: (1, T, d) already."""
    half = x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos.unsqueeze(1) + turned * sin.unsqueeze(1)


class RowTableAttention(nn.Module):
    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def _rotate(self, x, cos, sin):
        return rotate_rows(x, cos, sin)

    def forward(self, x, cos, sin):
        b, num_tokens, _ = x.shape
        q = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
        scores = q @ k.transpose(2, 3)
        causal = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        weights = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)
        context = (weights @ v).transpose(1, 2).reshape(b, num_tokens, -1)
        return self.out_proj(context)


class LiftedTableAttention(RowTableAttention):
    def _rotate(self, x, cos, sin):
        return rotate_lifted(x, cos, sin)


class RowTableRuns(RowTableAttention):
    """The same, written so that lifted (1, T, d) tables still run (on five axes)."""

    def forward(self, x, cos, sin):
        b, num_tokens, _ = x.shape
        q = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        q, k = rotate_rows(q, cos, sin), rotate_rows(k, cos, sin)
        scores = q @ k.transpose(-2, -1)
        causal = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(causal, float("-inf")) / self.head_dim ** 0.5, dim=-1)
        context = (weights @ v).transpose(1, 2).reshape(b, num_tokens, -1)
        return self.out_proj(context)


def rotate_rows_even(x, cos, sin):
    """``rotate_rows`` that asserts an even head size first."""
    assert x.shape[-1] % 2 == 0, "the head size must be even"
    return rotate_rows(x, cos, sin)


class RowTableEven(RowTableRuns):
    """Runs on lifted tables only at an even head size, which its own check asks for first."""

    def forward(self, x, cos, sin):
        b, num_tokens, _ = x.shape
        q = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        q, k = rotate_rows_even(q, cos, sin), rotate_rows_even(k, cos, sin)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(out.transpose(1, 2).reshape(b, num_tokens, -1))


def turn_complex(x, rot):
    """x: (B, T, H, d); rot: (T, d/2) complex rotations."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    rot = rot[None, :, None, :]
    return torch.view_as_real(pairs * rot).reshape(*x.shape).type_as(x)


class ComplexRotations(nn.Module):
    """Rotates in complex numbers with a table handed in under a name of its own."""

    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, rot):
        B, T, _ = x.shape
        q = turn_complex(self.wq(x).view(B, T, self.n_heads, self.head_dim), rot)
        k = turn_complex(self.wk(x).view(B, T, self.n_heads, self.head_dim), rot)
        v = self.wv(x).view(B, T, self.n_heads, self.head_dim)
        out = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(B, T, -1))
