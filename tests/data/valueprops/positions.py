"""Positions made into tables in the forward: tables applied where a token's position makes no
difference (positions-ignored), and correct ones in several styles. Each buggy module
marks the line the rule must point at with ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _halves(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def _rotary_tables(length, d):
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    angles = torch.outer(torch.arange(length).float(), inv)
    return torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()


class _Attention(nn.Module):
    def __init__(self, n_embd, n_head, max_len=32):
        super().__init__()
        self.n_head, self.max_len = n_head, max_len
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def attend(self, q, k, v):
        """q, k, v: (B, T, H, d)"""
        B, T, H, d = q.shape
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        w = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(dim=-1)
        return self.proj((w @ v).transpose(1, 2).reshape(B, T, H * d))

    def split(self, x):
        B, T, C = x.shape
        return self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).unbind(2)


class RotaryOneAnglePerSample(_Attention):
    """the tables cut by the first axis of (B, T, H, d): one angle per sample, q·k unchanged"""
    def forward(self, x):
        q, k, v = self.split(x)
        cos, sin = _rotary_tables(self.max_len, q.shape[-1])
        rows = q.shape[0]
        cos, sin = cos[:rows, None, None, :], sin[:rows, None, None, :]  # BUG
        q = q * cos + _halves(q) * sin
        k = k * cos + _halves(k) * sin
        return self.attend(q, k, v)


class RotaryOnePerToken(_Attention):
    def forward(self, x):
        q, k, v = self.split(x)
        cos, sin = _rotary_tables(self.max_len, q.shape[-1])
        T = q.shape[1]
        cos, sin = cos[None, :T, None, :], sin[None, :T, None, :]
        q = q * cos + _halves(q) * sin
        k = k * cos + _halves(k) * sin
        return self.attend(q, k, v)


class RotaryTimeFirstHelper(_Attention):
    """a helper written for (T, B, H, d), handed tensors moved there first"""
    def forward(self, x):
        q, k, v = self.split(x)
        cos, sin = _rotary_tables(self.max_len, q.shape[-1])
        q, k = q.transpose(0, 1), k.transpose(0, 1)
        n = q.shape[0]
        q = q * cos[:n, None, None] + _halves(q) * sin[:n, None, None]
        k = k * cos[:n, None, None] + _halves(k) * sin[:n, None, None]
        return self.attend(q.transpose(0, 1), k.transpose(0, 1), v)


class LearnedPositionsLookedUp(nn.Module):
    def __init__(self, n_embd, max_len=32):
        super().__init__()
        self.pos = nn.Embedding(max_len, n_embd)
        self.mix = nn.TransformerEncoderLayer(n_embd, 1, 2 * n_embd, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.mix(x + self.pos(torch.arange(x.shape[1])))


class RelativeBiasLookedUp(_Attention):
    """a learned bias per head and clipped distance, looked up by the distance of the positions"""
    def __init__(self, n_embd, n_head, max_len=32, reach=4):
        super().__init__(n_embd, n_head, max_len)
        self.reach = reach
        self.bias = nn.Parameter(torch.randn(2 * reach + 1, n_head))

    def forward(self, x):
        q, k, v = self.split(x)
        B, T, H, d = q.shape
        pos = torch.arange(T)
        rel = (pos[None, :] - pos[:, None]).clamp(-self.reach, self.reach) + self.reach
        bias = self.bias[rel].permute(2, 0, 1)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        w = (q @ k.transpose(-2, -1) / math.sqrt(d) + bias).softmax(dim=-1)
        return self.proj((w @ v).transpose(1, 2).reshape(B, T, H * d))


class SinusoidalAddedInForward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.n_embd = n_embd
        self.mix = nn.TransformerEncoderLayer(n_embd, 1, 2 * n_embd, dropout=0.0, batch_first=True)

    def forward(self, x):
        T, C = x.shape[1], self.n_embd
        div = torch.exp(torch.arange(0, C, 2).float() * (-math.log(10000.0) / C))
        angles = torch.arange(T).float()[:, None] * div
        table = torch.zeros(T, C)
        table[:, 0::2] = torch.sin(angles)
        table[:, 1::2] = torch.cos(angles)[:, : C // 2]
        return self.mix(x + table)


class TimeStepFeatures(nn.Module):
    """a diffusion time step's sinusoidal features: arange counts frequencies, not tokens"""
    def __init__(self, n_embd):
        super().__init__()
        self.n_embd = n_embd
        self.mlp = nn.Sequential(nn.Linear(n_embd, n_embd), nn.SiLU(), nn.Linear(n_embd, n_embd))

    def forward(self, x):
        half = self.n_embd // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half).float() / half)
        t = torch.full((x.shape[0],), 3.0)
        feats = torch.cat((torch.sin(t[:, None] * freqs), torch.cos(t[:, None] * freqs)), -1)
        return x + self.mlp(feats)[:, None, : x.shape[-1]]


class AnglesFor(nn.Module):
    """The angles of ``n`` positions, in halves"""
    def __init__(self, d):
        super().__init__()
        self.register_buffer("inv", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)))

    def forward(self, n):
        angles = torch.outer(torch.arange(n).float(), self.inv)
        return torch.cat((angles, angles), -1)


class RotaryCountedByHeads(_Attention):
    """q and k are (B, T, H, d), and the table is asked for q.shape[-2] positions: one per
    head. With one head, every token gets position 0's angle (no turn at all)."""
    def __init__(self, n_embd, n_head, max_len=32):
        super().__init__(n_embd, n_head, max_len)
        self.angles = AnglesFor(n_embd // n_head)

    def forward(self, x):
        q, k, v = self.split(x)
        if self.counted_by_tokens:
            angles = self.angles(q.shape[1])[:, None, :]
        else:
            angles = self.angles(q.shape[-2])[:, None, :]  # BUG
        q = q * angles.cos() + _halves(q) * angles.sin()
        k = k * angles.cos() + _halves(k) * angles.sin()
        return self.attend(q, k, v)

    counted_by_tokens = False


class RotaryCountedByTokens(RotaryCountedByHeads):
    counted_by_tokens = True
