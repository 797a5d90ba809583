"""Position tables and where they run: sinusoidal tables, learned position embeddings, rotary
angles (heads first and tokens first, real and complex), cached rotary tables, ALiBi, relative
position biases, patch positions and source positions in cross-attention, each the right way,
and buggy twins whose positions are sized or cut by the batch or the heads. Every shape
broadcasts and nothing raises; only where each axis came from tells the twins apart.

Class attributes as in the style corpus (tests/style_corpus.py): ``INPUTS``, ``INIT``, ``DIMS``,
``BUG`` on a buggy twin, its line marked ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

EVEN = {"d": 8}  # rotary angles come in pairs: an even head size (C = 88)


def sinusoid_table(length, width):
    """(length, width): sin on the even columns, cos on the odd ones (any width)."""
    where = torch.arange(length, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(1e4) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(where * rate)
    table[:, 1::2] = torch.cos(where * rate[: width // 2])
    return table


def turn_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def inverse_frequencies(head_size, base=10000.0):
    return 1.0 / base ** (torch.arange(0, head_size, 2, dtype=torch.float32) / head_size)


class _Heads(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def split(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        return [t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v)]

    def merge(self, y):
        B, H, T, d = y.shape
        return self.proj(y.transpose(1, 2).reshape(B, T, H * d))


# --- correct ------------------------------------------------------------------------------------

class SinusoidBatchFirst(nn.Module):
    INIT = {"d_model": "C", "max_len": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", sinusoid_table(max_len, d_model)[None])  # (1, L, C)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.out(x + self.pe[:, : x.size(1)])


class SinusoidTimeFirst(nn.Module):
    INIT = {"d_model": "C", "max_len": "L"}
    INPUTS = ["x=T,B,C"]

    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", sinusoid_table(max_len, d_model)[:, None])  # (L, 1, C)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        """x: shape [seq_len, batch_size, d_model]"""
        return self.out(x + self.pe[: x.size(0)])


class SinusoidTimeFirstUndeclared(SinusoidTimeFirst):
    """The same module with nothing declared: its docstring says time-first."""

    INIT = None
    INPUTS = None


class SinusoidComputedInForward(nn.Module):
    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        where = torch.arange(T, dtype=x.dtype).unsqueeze(1)
        rate = torch.exp(torch.arange(0, C, 2, dtype=x.dtype) * (-math.log(1e4) / C))
        table = torch.zeros(T, C, dtype=x.dtype)
        table[:, 0::2] = torch.sin(where * rate)
        table[:, 1::2] = torch.cos(where * rate[: C // 2])
        return self.out(x + table)


class LearnedPositions(nn.Module):
    INIT = {"vocab_size": "V", "n_embd": "C", "block_size": "L"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab_size, n_embd, block_size):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        T = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        return self.head(x)


class RotaryHeadsFirst(_Heads):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.register_buffer("inv_freq", inverse_frequencies(d_model // n_head))

    def forward(self, x):
        q, k, v = self.split(x)
        t = torch.arange(q.size(2), dtype=q.dtype)
        angles = torch.outer(t, self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)       # (T, d)
        cos, sin = angles.cos(), angles.sin()
        q = q * cos + turn_half(q) * sin
        k = k * cos + turn_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.merge(y)


class RotaryTokensFirst(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, C // self.n_head
        q = self.q(x).view(B, T, H, d)
        k, v = self.kv(x).view(B, T, 2, H, d).unbind(2)
        freqs = inverse_frequencies(d).to(x.dtype)
        ang = torch.einsum("t,f->tf", torch.arange(x.size(1), dtype=x.dtype), freqs)
        ang = ang.repeat_interleave(2, dim=-1)[None, :, None, :]   # (1, T, 1, d)
        pairs = lambda t: torch.stack((-t[..., 1::2], t[..., 0::2]), dim=-1).flatten(-2)
        q = q * ang.cos() + pairs(q) * ang.sin()
        k = k * ang.cos() + pairs(k) * ang.sin()
        att = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(d)
        att = att.softmax(dim=-1)
        y = torch.einsum("bhts,bshd->bthd", att, v).reshape(B, T, C)
        return self.proj(y)


class RotaryComplex(_Heads):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).unbind(2)   # (B, T, H, d) each
        turns = torch.outer(torch.arange(T, dtype=torch.float32), inverse_frequencies(d))
        phasors = torch.polar(torch.ones_like(turns), turns)[None, :, None, :]
        q = torch.view_as_real(torch.view_as_complex(q.reshape(B, T, self.n_head, d // 2, 2)) * phasors)
        k = torch.view_as_real(torch.view_as_complex(k.reshape(B, T, self.n_head, d // 2, 2)) * phasors)
        q, k = q.flatten(3).transpose(1, 2), k.flatten(3).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v.transpose(1, 2))
        return self.merge(y)


class RotaryCachedGrouped(nn.Module):
    """Cached rotary tables cut to the sequence length; one key/value head shared by all."""

    INIT = {"d_model": "C", "n_head": "H", "max_seq_len": "L"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def __init__(self, d_model, n_head, max_seq_len):
        super().__init__()
        self.n_head, self.head_size = n_head, d_model // n_head
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wkv = nn.Linear(d_model, 2 * self.head_size, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float32),
                             inverse_frequencies(self.head_size))
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_cached", angles.cos())   # (L, d)
        self.register_buffer("sin_cached", angles.sin())

    def forward(self, x):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)
        k, v = self.wkv(x).view(B, T, 1, 2 * self.head_size).transpose(1, 2).chunk(2, dim=-1)
        cos, sin = self.cos_cached[:T], self.sin_cached[:T]
        q = q * cos + turn_half(q) * sin
        k = k * cos + turn_half(k) * sin
        k = k.repeat_interleave(self.n_head, dim=1)
        v = v.repeat_interleave(self.n_head, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class ALiBi(_Heads):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def forward(self, x):
        q, k, v = self.split(x)
        H, T = q.size(1), q.size(2)
        slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, dtype=x.dtype) / H)
        where = torch.arange(T)
        distance = (where[None, :] - where[:, None]).to(x.dtype)           # (T, T)
        bias = slopes[:, None, None] * distance                            # (H, T, T)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + bias
        scores = scores.masked_fill(where[None, :] > where[:, None], float("-inf"))
        return self.merge(scores.softmax(dim=-1) @ v)


class RelativeBiasTable(_Heads):
    INIT = {"d_model": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head, block_size):
        super().__init__(d_model, n_head)
        self.block_size = block_size
        self.rel = nn.Embedding(2 * block_size - 1, n_head)

    def forward(self, x):
        q, k, v = self.split(x)
        T = x.size(1)
        where = torch.arange(T)
        offset = where[None, :] - where[:, None] + self.block_size - 1     # (T, T) in [0, 2L-1)
        bias = self.rel(offset).permute(2, 0, 1)                           # (H, T, T)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + bias
        return self.merge(scores.softmax(dim=-1) @ v)


class PatchPositions(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["img=B,3,20,20"]

    def __init__(self, dim, patch=4, max_patches=64):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, max_patches + 1, dim) * 0.02)
        self.attn = nn.MultiheadAttention(dim, 1, batch_first=True)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)                   # (B, N, C)
        x = torch.cat((self.cls.expand(x.size(0), -1, -1), x), dim=1)
        x = x + self.pos[:, : x.size(1)]
        y, _ = self.attn(x, x, x, need_weights=False)
        return y[:, 0]


class SourcePositions(nn.Module):
    """Cross-attention whose source gets positions of its own, along S."""

    INIT = {"d_model": "C", "n_head": "H", "max_len": "L"}
    INPUTS = ["x=B,T,C", "memory=B,S,C"]
    DIMS = {"L": 29}

    def __init__(self, d_model, n_head, max_len):
        super().__init__()
        self.n_head = n_head
        self.src_pos = nn.Embedding(max_len, d_model)
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x, memory):
        B, T, C = x.shape
        S = memory.size(1)
        memory = memory + self.src_pos(torch.arange(S))
        q = self.q(x).view(B, T, self.n_head, -1).transpose(1, 2)
        k, v = self.kv(memory).view(B, S, 2, self.n_head, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).reshape(B, T, C)


class PerHeadOffsets(_Heads):
    """A learned vector per head, looked up by head index: not a position table."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.per_head = nn.Embedding(n_head, d_model // n_head)

    def forward(self, x):
        q, k, v = self.split(x)
        q = q + self.per_head(torch.arange(q.size(1)))[:, None, :]        # (H, 1, d)
        return self.merge(F.scaled_dot_product_attention(q, k, v))


class LastTokenPerSample(nn.Module):
    """Batch indices (``arange(B)``) that pick a token per sample and offset a flat index."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C", "lengths=B:long:T"]

    def __init__(self, d_model):
        super().__init__()
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, lengths):
        B, T, C = x.shape
        last = x[torch.arange(B), lengths]                                # (B, C)
        flat = x.reshape(B * T, C)[torch.arange(B) * T + lengths]           # the same rows
        return self.out(last + flat)


class SinusoidByWavelength(nn.Module):
    """Angles as position over wavelength, even and odd columns picked with torch.where."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        T, C = x.shape[1], x.shape[2]
        i = torch.arange(C)
        angle = torch.arange(T)[:, None] / 10000 ** (2 * (i // 2) / C)    # (T, C)
        table = torch.where(i % 2 == 0, angle.sin(), angle.cos()).to(x.dtype)
        return self.out(x + table)


class TimestepEmbedding(nn.Module):
    """A diffusion-style embedding of one number per sample: frequencies from an arange, the
    sample's own value as the position."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C", "t=B"]

    def __init__(self, d_model):
        super().__init__()
        self.half = d_model // 2
        self.proj = nn.Linear(2 * self.half, d_model)

    def forward(self, x, t):
        freqs = torch.exp(-math.log(1e4) * torch.arange(self.half, dtype=x.dtype) / self.half)
        args = t[:, None] * freqs[None, :]                                 # (B, C/2)
        emb = self.proj(torch.cat((args.cos(), args.sin()), dim=-1))       # (B, C)
        return x + emb[:, None, :]


class RelativeSinusoidShifted(_Heads):
    """Scores against sinusoids of the 2T-1 relative distances (at the probe sizes 2T-1 is 13,
    the head size's number), aligned to the keys by the pad-and-reshape shift."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.register_buffer("inv_freq", inverse_frequencies(d_model))
        self.pos_proj = nn.Linear(d_model, d_model, bias=False)

    @staticmethod
    def shift(x):
        pad = torch.zeros((*x.size()[:3], 1), dtype=x.dtype)
        padded = torch.cat([pad, x], dim=-1)
        padded = padded.view(*x.size()[:2], x.size(3) + 1, x.size(2))
        return padded[:, :, 1:].view_as(x)[:, :, :, : x.size(-1) // 2 + 1]

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(x)
        distance = torch.arange(T - 1, -T, -1.0)                           # 2T-1 positions
        angles = distance[:, None] * self.inv_freq[None, :]
        waves = torch.cat((angles.sin(), angles.cos()), dim=-1)[:, :C]
        p = self.pos_proj(waves).view(-1, self.n_head, C // self.n_head).transpose(0, 1)
        scores = q @ k.transpose(-2, -1) + self.shift(q @ p.transpose(-2, -1))
        return self.merge((scores / math.sqrt(q.size(-1))).softmax(dim=-1) @ v)


class TimeFirstEncoder(nn.Module):
    """Tokens time-first into a time-first encoder, with the time-first table."""

    INIT = {"ntoken": "V", "d_model": "C", "nhead": "H", "max_len": "L"}
    INPUTS = ["src=T,B:long:V"]

    def __init__(self, ntoken, d_model, nhead, max_len):
        super().__init__()
        self.embed = nn.Embedding(ntoken, d_model)
        self.register_buffer("pe", sinusoid_table(max_len, d_model)[:, None])
        layer = nn.TransformerEncoderLayer(d_model, nhead, 32, 0.0)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def forward(self, src):
        x = self.embed(src) * math.sqrt(self.embed.embedding_dim)
        x = x + self.pe[: x.size(0)]
        return self.encoder(x)


class PrefixPositions(nn.Module):
    """All tokens but the last two, with positions counted by that prefix: T - 2 of them, as
    many as the batch at the probe sizes (5), yet along the tokens."""

    INIT = {"vocab_size": "V", "n_embd": "C", "block_size": "L"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab_size, n_embd, block_size):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        prefix = idx[:, :-2]
        x = self.tok(prefix) + self.pos(torch.arange(prefix.size(1)))
        return self.head(x.mean(dim=1))  # (B, V): one prediction per sample


class TokensFirstRotary(nn.Module):
    """Rotary angles for tensors laid out tokens first, (B, T, H, d): positions counted by axis 1."""

    def __init__(self, head_size):
        super().__init__()
        self.register_buffer("freqs", inverse_frequencies(head_size), persistent=False)

    def forward(self, x):
        ang = torch.outer(torch.arange(x.size(1), dtype=x.dtype), self.freqs)
        ang = ang.repeat_interleave(2, dim=-1)[None, :, None, :]  # (1, T, 1, d)
        pairs = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
        return x * ang.cos() + pairs * ang.sin()


class RotaryModuleTokensFirst(nn.Module):
    """A rotary module of its own, handed q and k tokens first, as it reads them."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.rotary = TokensFirstRotary(d_model // n_head)
        self.proj = nn.Linear(d_model, d_model)

    def heads(self, x):
        B, T, C = x.shape
        return [t.view(B, T, self.n_head, C // self.n_head) for t in self.qkv(x).split(C, dim=-1)]

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        q, k = self.rotary(q), self.rotary(k)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def rotary_time_first(q, k, cos, sin):
    """Rotary for tensors laid out time first, (T, B, H, d): the tables cut to q's first axis."""
    cos, sin = cos[: q.shape[0]], sin[: q.shape[0]]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RotaryTablesTimeFirst(nn.Module):
    """Angles made in the forward as (T, 1, 1, d) tables, applied by a helper written for
    time-first tensors, to q and k moved time first around the call."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("freqs", inverse_frequencies(d_model // n_head), persistent=False)
        self.proj = nn.Linear(d_model, d_model)

    def tables(self, T):
        ang = torch.outer(torch.arange(T, dtype=self.freqs.dtype), self.freqs)
        ang = torch.cat((ang, ang), dim=-1)
        return ang.cos()[:, None, None, :], ang.sin()[:, None, None, :]

    def rotated(self, q, k, cos, sin):
        q, k = rotary_time_first(q.transpose(0, 1), k.transpose(0, 1), cos, sin)
        return q.transpose(0, 1), k.transpose(0, 1)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head) for t in self.qkv(x).split(C, dim=-1))
        q, k = self.rotated(q, k, *self.tables(T))
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


# --- buggy ---------------------------------------------------------------------------------------

class TableCutByBatch(nn.Module):
    """The older tutorial's (L, 1, C) table cut by x.size(0) on batch-first input: sample b gets
    position b, and every token of it the same one."""

    BUG = "position-axis"
    INIT = {"d_model": "C", "max_len": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", sinusoid_table(max_len, d_model)[:, None])  # (L, 1, C)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        x = x + self.pe[: x.size(0)]  # BUG
        return self.out(x)


class TableCutByBatchUndeclared(TableCutByBatch):
    """The same, with nothing declared: ``B, T, C = x.shape`` says batch-first."""

    INIT = None
    INPUTS = None

    def forward(self, x):
        B, T, C = x.shape
        return self.out(x + self.pe[: x.size(0)])  # BUG


class LearnedLookupByBatch(nn.Module):
    BUG = "position-axis"
    INIT = {"vocab_size": "V", "n_embd": "C", "block_size": "L"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab_size, n_embd, block_size):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        B, T = idx.shape
        pos = self.pos(torch.arange(idx.size(0), device=idx.device))  # BUG
        return self.head(self.tok(idx) + pos.unsqueeze(1))


class RotaryOverHeads(_Heads):
    """Rotary angles for positions 0..H-1 on a (B, H, T, d) tensor: each head turned by its
    index, the tokens not at all."""

    BUG = "position-axis"
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = EVEN

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.register_buffer("inv_freq", inverse_frequencies(d_model // n_head))

    def forward(self, x):
        q, k, v = self.split(x)
        t = torch.arange(q.size(1), dtype=q.dtype)  # BUG
        angles = torch.outer(t, self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)[:, None, :]          # (H, 1, d)
        cos, sin = angles.cos(), angles.sin()
        q = q * cos + turn_half(q) * sin
        k = k * cos + turn_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.merge(y)


class RotaryCacheCutByHeads(RotaryCachedGrouped):
    BUG = "position-axis"

    def forward(self, x):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)
        k, v = self.wkv(x).view(B, T, 1, 2 * self.head_size).transpose(1, 2).chunk(2, dim=-1)
        n = q.shape[1]
        cos, sin = self.cos_cached[:n, None], self.sin_cached[:n, None]  # BUG
        q = q * cos + turn_half(q) * sin
        k = k.repeat_interleave(self.n_head, dim=1)
        k = k * cos + turn_half(k) * sin
        v = v.repeat_interleave(self.n_head, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class SinusoidComputedByBatch(SinusoidComputedInForward):
    BUG = "position-axis"

    def forward(self, x):
        B, T, C = x.shape
        where = torch.arange(x.size(0), dtype=x.dtype).unsqueeze(1)  # BUG
        rate = torch.exp(torch.arange(0, C, 2, dtype=x.dtype) * (-math.log(1e4) / C))
        table = torch.zeros(x.size(0), C, dtype=x.dtype)
        table[:, 0::2] = torch.sin(where * rate)
        table[:, 1::2] = torch.cos(where * rate[: C // 2])
        return self.out(x + table[:, None, :])


class LearnedHeadPositions(_Heads):
    """A learned position table (one row per position up to L) looked up by head index."""

    BUG = "position-axis"
    INIT = {"d_model": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head, block_size):
        super().__init__(d_model, n_head)
        self.pos = nn.Embedding(block_size, d_model // n_head)

    def forward(self, x):
        q, k, v = self.split(x)
        q = q + self.pos(torch.arange(q.size(1)))[:, None, :]  # BUG
        return self.merge(F.scaled_dot_product_attention(q, k, v))


class RotaryModuleHandedHeadsFirst(RotaryModuleTokensFirst):
    """The same rotary module handed q and k heads first, (B, H, T, d): it counts the heads as
    positions. The call is what does not fit the module, and the finding is placed there."""

    BUG = "position-axis"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.transpose(1, 2) for t in self.heads(x))
        q, k = self.rotary(q), self.rotary(k)  # BUG
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class TableCutByTokensAxis(nn.Module):
    """Angles for every position made in forward, cut to axis -2 of (B, H, T, d) queries: the
    tokens."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = {"d": 8, "H": 4}

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("inv_freq", inverse_frequencies(d_model // n_head))

    def angles(self, T):
        ang = torch.einsum("i,j->ij", torch.arange(T, dtype=torch.float32), self.inv_freq)
        return torch.cat((ang, ang), dim=-1)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        ang = self.angles(T)[-q.shape[-2]:, :]
        q, k = (t * ang.cos() + turn_half(t) * ang.sin() for t in (q, k))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)


class TableCutByHeadsAxis(TableCutByTokensAxis):
    """The same angles cut to axis -2 of (B, T, H, d) queries: to the heads."""

    BUG = "position-axis"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).unbind(2)
        ang = self.angles(T)[-q.shape[-2]:, :]  # BUG
        q, k = (t * ang.cos() + turn_half(t) * ang.sin() for t in (q, k))
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)


class RotaryTablesCutByBatch(RotaryTablesTimeFirst):
    """The time-first helper handed q and k batch first, (B, T, H, d): the tables are cut to the
    batch size and applied along it, so sample b is turned by position b at every token."""

    BUG = "position-axis"

    def rotated(self, q, k, cos, sin):
        cos, sin = cos[: q.shape[0]], sin[: q.shape[0]]  # BUG
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
