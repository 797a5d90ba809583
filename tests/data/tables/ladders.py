"""Sinusoidal tables whose frequency ladders are right, and ones an exponent's precedence broke:
rotary tables kept as attributes, computed in forward from a buffer, kept as a complex table,
an absolute position buffer, and a diffusion time step embedding."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _halves(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryAttributesPrecedence(nn.Module):
    """cos and sin made once at construction, kept as plain attributes."""

    def __init__(self, dim, max_len):
        super().__init__()
        base = 10000
        inv_freq = 1.0 / (base ** torch.arange(0, dim, 2).float() / dim)
        inv_freq = torch.cat((inv_freq, inv_freq), dim=-1)
        angles = torch.arange(max_len).unsqueeze(1) * inv_freq.unsqueeze(0)
        self.cos = torch.cos(angles)
        self.sin = torch.sin(angles)

    def forward(self, x):
        T = x.shape[1]
        return x * self.cos[:T] + _halves(x) * self.sin[:T]


class RotaryAttributes(RotaryAttributesPrecedence):
    def __init__(self, dim, max_len):
        nn.Module.__init__(self)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        inv_freq = torch.cat((inv_freq, inv_freq), dim=-1)
        angles = torch.arange(max_len).unsqueeze(1) * inv_freq.unsqueeze(0)
        self.cos = torch.cos(angles)
        self.sin = torch.sin(angles)


class RotaryForwardPrecedence(nn.Module):
    """The frequencies a buffer, the angles taken in forward."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        d = dim // heads
        self.register_buffer("inv_freq", 1.0 / 10000 ** torch.arange(0, d, 2).float() / d)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        freqs = torch.outer(torch.arange(T, dtype=self.inv_freq.dtype), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        q = q * emb.cos() + _halves(q) * emb.sin()
        k = k * emb.cos() + _halves(k) * emb.sin()
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


class RotaryForward(RotaryForwardPrecedence):
    def __init__(self, dim, heads):
        nn.Module.__init__(self)
        self.heads = heads
        d = dim // heads
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d))
        self.qkv = nn.Linear(dim, 3 * dim)


class RotaryComplexPrecedence(nn.Module):
    """A complex table on the unit circle (polar), kept as a buffer."""

    def __init__(self, dim, max_len, theta=10000.0):
        super().__init__()
        freqs = 1.0 / (theta ** torch.arange(0, dim, 2)[: dim // 2].float() / dim)
        t = torch.arange(max_len).float()
        self.register_buffer("freqs_cis", torch.polar(torch.ones(max_len, dim // 2),
                                                      torch.outer(t, freqs)))

    def forward(self, x):
        T = x.shape[1]
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * self.freqs_cis[:T]).flatten(-2).type_as(x)


class RotaryComplex(RotaryComplexPrecedence):
    def __init__(self, dim, max_len, theta=500000.0):
        nn.Module.__init__(self)
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
        t = torch.arange(max_len).float()
        self.register_buffer("freqs_cis", torch.polar(torch.ones(max_len, dim // 2),
                                                      torch.outer(t, freqs)))


class SinusoidFloorDivision(nn.Module):
    """The textbook table in a buffer, its exponent's step divided by floor."""

    def __init__(self, dim, max_len):
        super().__init__()
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim // 2))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class SinusoidRatesMultiplied(SinusoidFloorDivision):
    """The textbook table in a buffer with the ladder's rates multiplying the positions: the
    frequencies climb to thousands of radians per position."""

    def __init__(self, dim, max_len):
        nn.Module.__init__(self)
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len).float().unsqueeze(1)
        rates = 10000.0 ** (torch.arange(0, dim, 2).float() / dim)
        pe[:, 0::2] = torch.sin(position * rates)
        pe[:, 1::2] = torch.cos(position * rates)
        self.register_buffer("pe", pe.unsqueeze(0))


class SinusoidRatesDivided(SinusoidFloorDivision):
    """The same rates, dividing the positions: the textbook table."""

    def __init__(self, dim, max_len):
        nn.Module.__init__(self)
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len).float().unsqueeze(1)
        rates = 10000.0 ** (torch.arange(0, dim, 2).float() / dim)
        pe[:, 0::2] = torch.sin(position / rates)
        pe[:, 1::2] = torch.cos(position / rates)
        self.register_buffer("pe", pe.unsqueeze(0))


class Sinusoid(SinusoidFloorDivision):
    def __init__(self, dim, max_len):
        nn.Module.__init__(self)
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))


class TimestepPrecedence(nn.Module):
    """A diffusion time step embedding: random steps, sines and cosines side by side."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32)) / half
        args = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class Timestep(TimestepPrecedence):
    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class RotaryHalfZeroPadded(nn.Module):
    """Half of the pairs left unturned on purpose (their frequency exactly zero)."""

    def __init__(self, dim, max_len):
        super().__init__()
        quarter = dim // 4
        inv_freq = 1.0 / (10000 ** (torch.arange(0, quarter).float() / quarter))
        inv_freq = torch.cat((inv_freq, torch.zeros(dim // 2 - quarter)))
        angles = torch.outer(torch.arange(max_len).float(), torch.cat((inv_freq, inv_freq)))
        self.register_buffer("cos_table", angles.cos())
        self.register_buffer("sin_table", angles.sin())

    def forward(self, x):
        T = x.shape[1]
        return x * self.cos_table[:T] + _halves(x) * self.sin_table[:T]


class SnakeActivation(nn.Module):
    """sin of a signal (not a table): never read as one."""

    def __init__(self, dim):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, 1, dim))

    def forward(self, x):
        return x + torch.sin(self.alpha * x) ** 2 / self.alpha


class FourierGrid(nn.Module):
    """Fourier features of a grid from -1 to 1 (one position at or near 0), bands 1 to 5."""

    def __init__(self, dim, bands=4):
        super().__init__()
        self.bands = bands
        self.proj = nn.Linear(dim + 4 * bands, dim)

    def forward(self, x):
        B, T, C = x.shape
        pos = torch.linspace(-1.0, 1.0, T).unsqueeze(-1)
        angles = pos * torch.linspace(1.0, 5.0, self.bands) * math.pi
        feats = torch.cat((angles.sin(), angles.cos(), (2 * angles).sin(), (2 * angles).cos()), -1)
        return self.proj(torch.cat((x, feats.expand(B, T, -1)), dim=-1))
