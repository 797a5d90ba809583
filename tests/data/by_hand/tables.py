"""Token ids read by indexing a table of its own (no nn.Embedding), and a grouped attention
whose key heads are the query heads divided by a ratio (16 and 2 by default)."""

import math

import torch
import torch.nn as nn


class TableLookup(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, dim) * 0.02)
        self.out = nn.Linear(dim, vocab_size)

    def forward(self, x):
        return self.out(self.weight[x])


class RatioGroups(nn.Module):
    def __init__(self, dim, ratio: int = 2, num_heads: int = 16):
        super().__init__()
        self.heads, self.ratio, self.size = num_heads, ratio, dim // num_heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * (dim // ratio))
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.heads, self.size).transpose(1, 2)
        k, v = self.kv(x).chunk(2, dim=-1)
        k = k.view(B, T, self.heads // self.ratio, self.size).transpose(1, 2)
        v = v.view(B, T, self.heads // self.ratio, self.size).transpose(1, 2)
        k, v = k.repeat_interleave(self.ratio, dim=1), v.repeat_interleave(self.ratio, dim=1)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(self.size)).softmax(dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(B, T, C))


class ResidualWithTime(nn.Module):
    """A diffusion U-Net's residual block: names that say nothing, read from the first layer
    each meets (a group norm of the channels; a linear map past an activation)."""

    def __init__(self, in_channels, out_channels, n_time=40):
        super().__init__()
        self.norm = nn.GroupNorm(1, in_channels)
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.linear_time = nn.Linear(n_time, out_channels)
        self.skip = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, feature, time):
        residue = feature
        feature = self.conv(torch.nn.functional.silu(self.norm(feature)))
        time = self.linear_time(torch.nn.functional.silu(time))
        return feature + time[:, :, None, None] + self.skip(residue)


class OneTokenAtATime(nn.Module):
    """A decoder step with its own cache, that takes one token at a time and says so."""

    def __init__(self, dim, max_len=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("cache_k", torch.zeros(8, max_len, dim))
        self.register_buffer("cache_v", torch.zeros(8, max_len, dim))

    def forward(self, x, start_pos: int = 3):
        batch_size, seq_len, _ = x.shape
        assert seq_len == 1, "one token at a time"
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        keys = torch.cat((self.cache_k[:batch_size, :start_pos], k), dim=1)
        values = torch.cat((self.cache_v[:batch_size, :start_pos], v), dim=1)
        weights = (q @ keys.transpose(1, 2) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        return weights @ values


class WidthRatioRotary(nn.Module):
    """The width named ``hidden_dim``, key heads the query heads over a ratio (16 and 2 by
    default), and rotary halves of each head: three readings, one after the other."""

    def __init__(self, hidden_dim, ratio: int = 2, num_heads: int = 16):
        super().__init__()
        self.heads, self.ratio, self.size = num_heads, ratio, hidden_dim // num_heads
        self.q = nn.Linear(hidden_dim, hidden_dim)
        self.kv = nn.Linear(hidden_dim, 2 * (hidden_dim // ratio))
        self.out = nn.Linear(hidden_dim, hidden_dim)

    def turn(self, t):
        half = t.shape[-1] // 2
        angle = torch.arange(t.shape[-2])[:, None] * 0.1 * torch.ones(half)
        a, b = t[..., :half], t[..., half:]
        return torch.cat((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), -1)

    def forward(self, x):
        B, T, C = x.shape
        q = self.turn(self.q(x).view(B, T, self.heads, self.size).transpose(1, 2))
        k, v = self.kv(x).chunk(2, dim=-1)
        k = self.turn(k.view(B, T, self.heads // self.ratio, self.size).transpose(1, 2))
        v = v.view(B, T, self.heads // self.ratio, self.size).transpose(1, 2)
        k, v = k.repeat_interleave(self.ratio, dim=1), v.repeat_interleave(self.ratio, dim=1)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(self.size)).softmax(dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(B, T, C))
