"""Rotary positions in several styles (halves, neighbours, partial, complex numbers, a scaled
turn like xPos, halves rotated by writes into a copy), all right but those whose table pairs
the features the other way."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_halves(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_neighbours(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class Rotary(nn.Module):
    """q and k turned by rotary positions; ``table`` picks how the table repeats its angles."""

    table = "halves"
    rotate = staticmethod(rotate_halves)

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def angles(self, T, d):
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        freqs = torch.outer(torch.arange(T).float(), inv)
        if self.table == "halves":
            return torch.cat((freqs, freqs), dim=-1)
        return freqs.repeat_interleave(2, dim=-1)

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).permute(2, 0, 3, 1, 4)
        emb = self.angles(T, d)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + self.rotate(q) * sin
        k = k * cos + self.rotate(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


def rotate_halves_in_place(x):
    """The halves rotated by writing into a copy, as some libraries write it."""
    half = x.shape[-1] // 2
    turned = x.clone()
    turned[..., :half] = -x[..., half:]
    turned[..., half:] = x[..., :half]
    return turned


class RotaryWrittenInPlace(Rotary):
    rotate = staticmethod(rotate_halves_in_place)


class RotaryWrittenInPlaceMismatched(Rotary):
    table = "neighbours"  # halves rotated by writes into a copy, the neighbours' table
    rotate = staticmethod(rotate_halves_in_place)


class RotaryNeighbours(Rotary):
    table = "neighbours"
    rotate = staticmethod(rotate_neighbours)


class RotaryMismatched(Rotary):
    table = "neighbours"  # halves rotated, the neighbours' table


def rotate_split_neighbours_joined_halves(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.cat((-x2, x1), dim=-1)  # neighbours split, halves joined: no pair turns


class RotaryHalfJoined(Rotary):
    table = "neighbours"  # the neighbours' table; the rotation pairs nothing
    rotate = staticmethod(rotate_split_neighbours_joined_halves)


class RotaryBlockTiled(Rotary):
    """Neighbours rotated; the table of one angle per pair made once per forward, then laid out
    along the features by blocks (each angle's two copies half a head apart)."""

    rotate = staticmethod(rotate_neighbours)

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).permute(2, 0, 3, 1, 4)
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        pairs = torch.outer(torch.arange(T).float(), inv)
        cos, sin = pairs.cos(), pairs.sin()
        cos = cos.repeat(1, 2)  # blocks: neighbours need repeat_interleave(2, -1)
        sin = sin.repeat(1, 2)
        q = q * cos + self.rotate(q) * sin
        k = k * cos + self.rotate(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class RotaryPartial(Rotary):
    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        r = d - d % 4 if d > 4 else d
        r = r // 2 * 2
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).permute(2, 0, 3, 1, 4)
        emb = self.angles(T, r)
        cos, sin = emb.cos(), emb.sin()
        q_rot, q_pass = q[..., :r], q[..., r:]
        k_rot, k_pass = k[..., :r], k[..., r:]
        q = torch.cat((q_rot * cos + self.rotate(q_rot) * sin, q_pass), dim=-1)
        k = torch.cat((k_rot * cos + self.rotate(k_rot) * sin, k_pass), dim=-1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class RotaryScaled(Rotary):
    """xPos-like: the turn scaled by a decay per feature pair (lengths change on purpose)."""
    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).permute(2, 0, 3, 1, 4)
        emb = self.angles(T, d)
        scale = (torch.arange(0, d, 2).float() + 0.4 * d) / (1.4 * d)
        scale = torch.cat((scale, scale)) ** (torch.arange(T).float()[:, None] / 64)
        cos, sin = emb.cos() * scale, emb.sin() * scale
        q = q * cos + self.rotate(q) * sin
        k = k * (cos / scale / scale) + self.rotate(k) * (sin / scale / scale)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class RotaryComplex(Rotary):
    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).permute(2, 0, 3, 1, 4)
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        cis = torch.polar(torch.ones(T, d // 2), torch.outer(torch.arange(T).float(), inv))
        q = torch.view_as_real(torch.view_as_complex(q.float().reshape(B, self.n_head, T, -1, 2)) * cis).flatten(-2)
        k = torch.view_as_real(torch.view_as_complex(k.float().reshape(B, self.n_head, T, -1, 2)) * cis).flatten(-2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class CachedRotary(nn.Module):
    """Tables of cosines and sines cached as buffers for a maximum length, cut per call."""

    neighbours_table = False

    def __init__(self, head_size, max_len=64):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, head_size, 2).float() / head_size))
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        emb = freqs.repeat_interleave(2, dim=-1) if self.neighbours_table else torch.cat((freqs, freqs), -1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def forward(self, x):
        T = x.shape[-2]
        return x * self.cos_cached[:T] + rotate_halves(x) * self.sin_cached[:T]


class CachedNeighboursTable(CachedRotary):
    neighbours_table = True


class CachedAttention(nn.Module):
    rotary = CachedRotary

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.rope = self.rotary(n_embd // n_head)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        q, k = self.rope(q), self.rope(k)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)


class CachedAttentionMismatched(CachedAttention):
    rotary = CachedNeighboursTable
