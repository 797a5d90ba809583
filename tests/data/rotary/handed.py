"""Attention that takes its rotary tables from its caller: ``cos``/``sin`` of each position's
angles (the halves repeated, rotated with ``rotate_half``), Meta-style complex rotations
``freqs_cis``, and a module that makes the tables from ``position_ids``."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(t):
    a, b = t.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class TablesHandedIn(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.out = nn.Linear(n_embd, n_embd, bias=False)

    def split(self, x):
        B, T, C = x.shape
        return (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                for t in self.qkv(x).split(C, dim=-1))

    def attend(self, x, cos, sin):
        q, k, v = self.split(x)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        return self.out(self.attend(x, cos, sin).transpose(1, 2).reshape(B, T, C))


class TablesHandedInJumbled(TablesHandedIn):
    def forward(self, x, cos, sin):
        B, T, C = x.shape
        return self.out(self.attend(x, cos, sin).reshape(B, T, C))  # BUG


class ComplexRotations(TablesHandedIn):
    def forward(self, x, freqs_cis):
        B, T, C = x.shape
        q, k, v = self.split(x)

        def rotate(t):
            pairs = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
            return torch.view_as_real(pairs * freqs_cis).flatten(-2).type_as(t)

        y = F.scaled_dot_product_attention(rotate(q), rotate(k), v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class TablesFromPositions(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim))

    def forward(self, position_ids):
        angles = position_ids[..., None].float() * self.inv_freq
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos(), angles.sin()


class TimeEmbedding(nn.Module):
    """A timestep's sinusoidal embedding, made in the dtype its caller asks for."""

    def __init__(self, hidden_size, frequency_size=32):
        super().__init__()
        self.frequency_size = frequency_size
        self.mlp = nn.Sequential(nn.Linear(frequency_size, hidden_size), nn.SiLU(),
                                 nn.Linear(hidden_size, hidden_size))

    def forward(self, t, dtype):
        half = self.frequency_size // 2
        freqs = torch.exp(-torch.arange(half, dtype=torch.float32) * (9.2 / half))
        angles = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat((angles.cos(), angles.sin()), dim=-1).to(dtype))


class PartialRotary(nn.Module):
    """Rotates the first ``rotary_dim`` features of each head."""

    def __init__(self, head_size, rotary_dim, base):
        super().__init__()
        self.rotary_dim = rotary_dim
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, rotary_dim, 2).float() / rotary_dim))

    def forward(self, positions, query):
        angles = positions[..., None].float() * self.inv_freq
        cos, sin = angles.cos().repeat(1, 1, 2)[:, None], angles.sin().repeat(1, 1, 2)[:, None]
        turned, kept = query[..., :self.rotary_dim], query[..., self.rotary_dim:]
        return torch.cat((turned * cos + rotate_half(turned) * sin, kept), dim=-1)
