"""Modules whose forwards say their inputs' shapes in their docstrings, in the styles speech and
point-cloud code writes them (each written for these tests)."""

import math

import torch
import torch.nn as nn


class RelativePositionAttention(nn.Module):
    """Self-attention that adds scores against relative position embeddings."""

    def __init__(self, n_head: int, n_feat: int):
        super().__init__()
        self.h = n_head
        self.d_k = n_feat // n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        self.linear_out = nn.Linear(n_feat, n_feat)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), -1, self.h, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, pos_emb):
        """Attend over the keys, with a score for each relative position.

        Args:
            query (torch.Tensor): Query tensor (#batch, time1, size).
            key (torch.Tensor): Key tensor (#batch, time2, size).
            value (torch.Tensor): Value tensor (#batch, time2, size).
            pos_emb (torch.Tensor): Relative position embeddings
                (#batch, 2*time1-1, size).

        Returns:
            torch.Tensor: Output tensor (#batch, time1, size).
        """
        n_batch, t1, _ = query.shape
        q, k, v = self.heads(self.linear_q(query)), self.heads(self.linear_k(key)), \
            self.heads(self.linear_v(value))
        p = self.heads(self.linear_pos(pos_emb))
        content = q @ k.transpose(-2, -1)
        by_offset = q @ p.transpose(-2, -1)  # (batch, head, time1, 2*time1-1)
        offsets = torch.arange(t1).unsqueeze(0) - torch.arange(t1).unsqueeze(1) + t1 - 1
        position = by_offset.gather(-1, offsets.expand(n_batch, self.h, t1, t1))
        out = self.weights(content, position) @ v
        return self.linear_out(out.transpose(1, 2).reshape(n_batch, -1, self.h * self.d_k))

    def weights(self, content, position):
        return ((content + position) / math.sqrt(self.d_k)).softmax(dim=-1)


class RelativePositionAttentionScaledByWidth(RelativePositionAttention):
    """The same, scaled by the model's width."""

    def weights(self, content, position):
        return ((content + position) / math.sqrt(self.h * self.d_k)).softmax(dim=-1)  # BUG: attention-scale


class PointAttention(nn.Module):
    """Vector attention over points, with their coordinates' differences as positions."""

    def __init__(self, dim: int, pos_hidden: int = 16):
        super().__init__()
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.pos_mlp = nn.Sequential(nn.Linear(3, pos_hidden), nn.ReLU(), nn.Linear(pos_hidden, dim))

    def forward(self, x, pos):
        """
        - **x** (batch, n, dim): the points' features
        - **pos** (batch, n, 3): the points' coordinates
        """
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        rel = self.pos_mlp(pos[:, :, None, :] - pos[:, None, :, :])
        weights = (q[:, :, None, :] - k[:, None, :, :] + rel).softmax(dim=-2)
        return (weights * (v[:, None, :, :] + rel)).sum(dim=2)


class TimeFirstRotary(nn.Module):
    """Rotary position angles for heads laid out time first."""

    def __init__(self, d: int, base: int = 10_000):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, d, 2).float() / d))

    def forward(self, x):
        """Rotate each pair of features by its position's angle.

        Args:
            x (Tensor): Input tensor (seq_len, batch_size, n_heads, d)
        """
        t = torch.arange(x.size(0), dtype=self.inv_freq.dtype)
        angles = torch.outer(t, self.inv_freq).repeat_interleave(2, dim=-1)[:, None, None, :]
        pairs = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
        return x * angles.cos() + pairs * angles.sin()


class UndocumentedTimeFirstRotary(nn.Module):
    def __init__(self, d: int, base: int = 10_000):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, d, 2).float() / d))

    def forward(self, x):
        t = torch.arange(x.size(0), dtype=self.inv_freq.dtype)
        angles = torch.outer(t, self.inv_freq).repeat_interleave(2, dim=-1)[:, None, None, :]
        pairs = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
        return x * angles.cos() + pairs * angles.sin()


class StaleDocstringPositions(nn.Module):
    """A learned position table added batch first, under a docstring left from a time-first
    version."""

    def __init__(self, d_model: int, max_len: int = 64):
        super().__init__()
        self.pe = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, x):
        """x (Tensor): the sequence (seq_len, batch, d_model)"""
        return x + self.pe[: x.size(1)]


class WeightMatricesScaledByLength(nn.Module):
    """Projections as weight matrices the forward multiplies by, and a scale read from the keys
    after they were turned: the length, not the head size."""

    def __init__(self, h: int, d_model: int):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.w_q = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.w_k = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.w_v = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))

    def forward(self, query, key, val):
        """
        query : 3d tensor (batch_size, seq_len, d_model)
        key   : 3d tensor (batch_size, seq_len, d_model)
        val   : 3d tensor (batch_size, seq_len, d_model)
        """
        b, t, c = query.shape
        q, k, v = (torch.matmul(x, w).view(b, -1, self.h, self.d_k).transpose(1, 2)
                   for x, w in ((query, self.w_q), (key, self.w_k), (val, self.w_v)))
        k = k.transpose(2, 3)
        scores = torch.matmul(q, k) / math.sqrt(k.shape[3])  # BUG: attention-scale
        out = torch.matmul(scores.softmax(dim=-1), v)
        return out.transpose(1, 2).reshape(b, t, c)
