"""Forwards that write state the next call reads (stateful-forward), and modules that keep state
correctly. Each buggy module marks the line the rule must point at with ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class AnglesFromFirstLength(nn.Module):
    """Position angles scaled by the length of the first call, then reused."""

    def __init__(self, n_embd):
        super().__init__()
        self.freq = nn.Parameter(torch.linspace(0.5, 4.0, n_embd), requires_grad=False)
        self.proj = nn.Linear(n_embd, n_embd)
        self.angles = None

    def forward(self, x):
        if self.angles is None:
            self.angles = torch.arange(x.size(1))[:, None] * self.freq / x.size(1)  # BUG
        return self.proj(x + torch.sin(self.angles[: x.size(1)]))


class AnglesEachCall(AnglesFromFirstLength):
    def forward(self, x):
        angles = torch.arange(x.size(1))[:, None] * self.freq / x.size(1)
        return self.proj(x + torch.sin(angles))


class ShiftAddedToBias(nn.Module):
    """A learned shift folded into the output bias in place: added again on every call."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.shift = nn.Parameter(torch.randn(n_embd) * 0.1)

    def forward(self, x):
        self.proj.bias.data += self.shift.data  # BUG
        return self.proj(x)


class ShiftAddedToOutput(ShiftAddedToBias):
    def forward(self, x):
        return self.proj(x) + self.shift


class CallCounterBuffer(nn.Module):
    """A step count kept in a buffer and mixed into the output."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls = self.calls + 1  # BUG
        return self.proj(x) / self.calls


class LazyTableForMaxLength(nn.Module):
    """A sinusoid table built on first use for the longest length: the same on every call."""

    def __init__(self, n_embd, max_len=64):
        super().__init__()
        self.n_embd, self.max_len = n_embd, max_len
        self.proj = nn.Linear(n_embd, n_embd)
        self.table = None

    def forward(self, x):
        if self.table is None:
            pos = torch.arange(self.max_len)[:, None]
            div = torch.exp(torch.arange(0, self.n_embd, 2) * (-math.log(10000.0) / self.n_embd))
            table = torch.zeros(self.max_len, self.n_embd)
            table[:, 0::2] = torch.sin(pos * div)
            table[:, 1::2] = torch.cos(pos * div)[:, : self.n_embd // 2]
            self.table = table
        return self.proj(x + self.table[: x.size(1)])


class KeepsLastAttention(nn.Module):
    """Keeps its last attention map for inspection, and a per-sample memory for the next call."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.memory = None
        self.last_attention = None

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        if self.memory is not None and self.memory[0].shape[0] == B:
            k = torch.cat([self.memory[0], k], dim=2)
            v = torch.cat([self.memory[1], v], dim=2)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head), dim=-1)
        self.last_attention = att.detach()
        self.memory = (k[:, :, -T:].detach(), v[:, :, -T:].detach())
        return (att @ v).transpose(1, 2).reshape(B, T, C)


class CachedBiasAttention(nn.Module):
    """A distance bias per head cached in a buffer on the first call, whose cached path returns
    the scores with the bias added while the first returns the bias alone: the caller adds
    the scores twice from the second call on. Beside it, a causal mask cached the same way,
    which is harmless."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.out = nn.Linear(n_embd, n_embd)
        self.register_buffer("slopes", 2.0 ** -torch.arange(1, n_head + 1, dtype=torch.float32)[:, None, None])
        self.register_buffer("bias", None, persistent=False)
        self.register_buffer("mask", None, persistent=False)

    def distance(self, scores):
        n = scores.shape[-1]
        if self.bias is not None and self.bias.shape[-1] >= n:
            return scores + self.bias[..., :n, :n]
        positions = torch.arange(n)
        bias = -(positions[None, :] - positions[:, None]).abs() * self.slopes  # BUG
        self.register_buffer("bias", bias, persistent=False)
        return bias

    def causal(self, n):
        if self.mask is not None and self.mask.shape[-1] >= n:
            return self.mask[:n, :n]
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        self.register_buffer("mask", mask, persistent=False)
        return mask

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, c // self.n_head).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.n_head)
        scores = scores + self.distance(scores)
        scores = scores.masked_fill(self.causal(t), float("-inf"))
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))


class CachedBiasAttentionFixed(CachedBiasAttention):
    """The same caches, the cached path returning the bias alone, as the first does."""

    def distance(self, scores):
        n = scores.shape[-1]
        if self.bias is None or self.bias.shape[-1] < n:
            positions = torch.arange(n)
            self.register_buffer("bias", -(positions[None, :] - positions[:, None]).abs() * self.slopes,
                                 persistent=False)
        return self.bias[..., :n, :n]
