"""Causal styles for the causal-leak check, written the ways decoders, state-space models and
streaming code write them: a prefill chunk attending to a KV cache passed in, a local window
built as a difference of triangles, chunked local attention with one chunk of memory, a causal
depthwise conv1d (left padding, or padding both sides and keeping the first T outputs), a
token shift, a decayed scan (loop, log-space cumsum, cumprod of forget gates), an exponential
moving average as an FFT convolution padded to 2T, RoPE from a sliced cos/sin table, causal
masks from an ``arange`` comparison and from a float buffer, a decoder whose cross-attention
reads the whole source. Buggy twins (``BUG = "causal-leak"``, the line marked ``# BUG``) leak
one later position each: an unmasked new chunk, a symmetric window, symmetric conv padding,
the wrong end of the padded conv, ``torch.roll`` for the shift, a scan mask transposed, a circular
FFT convolution, a mask comparison the wrong way round, a GroupNorm over time, the causal mask
put on the cross-attention instead of the self-attention."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def split(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return [t.view(B, T, self.h, self.dk).transpose(1, 2) for t in (q, k, v)]

    def merge(self, y):
        B, H, T, d = y.shape
        return self.out(y.transpose(1, 2).reshape(B, T, H * d))


# --- a prefill chunk of T new tokens after S cached ones -------------------------------------------

class CausalPrefillWithCache(_Heads):
    """T new tokens see every cached key and the new keys up to their own position."""

    INPUTS = ["x=B,T,C", "past_k=B,H,S,d", "past_v=B,H,S,d"]

    def forward(self, x, past_k, past_v):
        q, k, v = self.split(x)
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        T, P = q.shape[2], past_k.shape[2]
        keep = torch.ones(T, P + T, dtype=torch.bool).tril(diagonal=P)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.dk)
        scores = scores.masked_fill(~keep, float("-inf"))
        return self.merge(scores.softmax(dim=-1) @ v), k, v


class CausalPrefillMaskWithoutOffset(_Heads):
    """The cache is seen, but the new chunk is not masked at all."""

    BUG = "causal-leak"
    INPUTS = ["x=B,T,C", "past_k=B,H,S,d", "past_v=B,H,S,d"]

    def forward(self, x, past_k, past_v):
        q, k, v = self.split(x)
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        T, P = q.shape[2], past_k.shape[2]
        keep = torch.ones(T, P + T, dtype=torch.bool).tril(diagonal=P + T)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.dk)
        scores = scores.masked_fill(~keep, float("-inf"))
        return self.merge(scores.softmax(dim=-1) @ v), k, v  # BUG


# --- local windows ---------------------------------------------------------------------------------

class CausalLocalWindowTriangles(_Heads):
    """Each query sees itself and the two previous positions: tril minus a lower tril."""

    window = 3

    def forward(self, x):
        q, k, v = self.split(x)
        T = q.shape[2]
        ones = torch.ones(T, T)
        band = ones.tril() - ones.tril(-self.window)
        scores = q @ k.transpose(-2, -1) * self.dk ** -0.5
        scores = scores.masked_fill(band == 0, torch.finfo(scores.dtype).min)
        return self.merge(F.softmax(scores, dim=-1) @ v)


class CausalLocalWindowSymmetric(_Heads):
    """A band that was meant to be one-sided but reaches two positions ahead too."""

    BUG = "causal-leak"
    window = 3

    def forward(self, x):
        q, k, v = self.split(x)
        T = q.shape[2]
        band = torch.ones(T, T).triu(-self.window + 1).tril(self.window - 1)
        scores = q @ k.transpose(-2, -1) * self.dk ** -0.5
        scores = scores.masked_fill(band == 0, torch.finfo(scores.dtype).min)  # BUG
        return self.merge(F.softmax(scores, dim=-1) @ v)


class CausalChunkWithMemory(_Heads):
    """Chunks of 3: a query sees the earlier part of its chunk and the whole previous chunk
    (Transformer-XL's one segment of memory, without the recurrence)."""

    chunk = 3

    def forward(self, x):
        q, k, v = self.split(x)
        T = q.shape[2]
        pos = torch.arange(T)
        qc, kc = pos[:, None] // self.chunk, pos[None, :] // self.chunk
        keep = (pos[None, :] <= pos[:, None]) & (kc >= qc - 1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return self.merge(out)


# --- causal convolutions ---------------------------------------------------------------------------

class CausalDepthwiseConv(nn.Module):
    """Mamba/Hyena's short causal conv: depthwise, k-1 zeros on the left only."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model, kernel=4):
        super().__init__()
        self.kernel = kernel
        self.conv = nn.Conv1d(d_model, d_model, kernel, groups=d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        h = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))
        return self.proj(F.silu(self.conv(h)).transpose(1, 2))


class CausalDepthwiseConvSamePadding(CausalDepthwiseConv):
    BUG = "causal-leak"

    def __init__(self, d_model, kernel=3):
        super().__init__(d_model, kernel)
        self.conv = nn.Conv1d(d_model, d_model, kernel, groups=d_model, padding="same")

    def forward(self, x):
        h = self.conv(x.transpose(1, 2))  # BUG
        return self.proj(F.silu(h).transpose(1, 2))


class CausalConvPadBothKeepFirst(CausalDepthwiseConv):
    """Mamba's reference code: ``padding=k-1`` on both sides, then the first T outputs."""

    def __init__(self, d_model, kernel=4):
        super().__init__(d_model, kernel)
        self.conv = nn.Conv1d(d_model, d_model, kernel, groups=d_model, padding=kernel - 1)

    def forward(self, x):
        T = x.shape[1]
        h = self.conv(x.transpose(1, 2))[..., :T]
        return self.proj(F.silu(h).transpose(1, 2))


class CausalConvPadBothKeepLast(CausalConvPadBothKeepFirst):
    BUG = "causal-leak"

    def forward(self, x):
        T = x.shape[1]
        h = self.conv(x.transpose(1, 2))[..., -T:]  # BUG
        return self.proj(F.silu(h).transpose(1, 2))


class CausalTokenShift(nn.Module):
    """RWKV's token shift: each position mixes itself with the previous one (zeros before 0)."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model):
        super().__init__()
        self.mix = nn.Parameter(torch.rand(d_model))
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        shifted = F.pad(x, (0, 0, 1, -1))
        return self.proj(x * self.mix + shifted * (1 - self.mix))


class CausalTokenShiftRolled(CausalTokenShift):
    """``torch.roll`` wraps the last position round to the first."""

    BUG = "causal-leak"

    def forward(self, x):
        shifted = torch.roll(x, shifts=1, dims=1)  # BUG
        return self.proj(x * self.mix + shifted * (1 - self.mix))


# --- decayed scans ---------------------------------------------------------------------------------

class CausalDecayLoop(nn.Module):
    """RWKV/retention in its recurrent form: a state decayed and updated position by position."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model):
        super().__init__()
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.r = nn.Linear(d_model, d_model)
        self.decay = nn.Parameter(torch.linspace(-2.0, 0.0, d_model))

    def forward(self, x):
        B, T, C = x.shape
        k, v, r = self.k(x).exp(), self.v(x), torch.sigmoid(self.r(x))
        w = torch.exp(-torch.exp(self.decay))
        num = x.new_zeros(B, C)
        den = x.new_zeros(B, C)
        outs = []
        for t in range(T):
            num = w * num + k[:, t] * v[:, t]
            den = w * den + k[:, t]
            outs.append(r[:, t] * num / den)
        return torch.stack(outs, dim=1)


class CausalScanLogSpace(nn.Module):
    """A Mamba-like selective scan written with cumsums: input-dependent decay a_t in (0, 1),
    h_t = sum over s <= t of prod(a_{s+1..t}) * u_s, from exp(A_t - A_s) masked to s <= t."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model):
        super().__init__()
        self.gate = nn.Linear(d_model, d_model)
        self.inp = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.shape[1]
        log_a = F.logsigmoid(self.gate(x))                   # (B, T, C)
        A = torch.cumsum(log_a, dim=1)
        diff = A[:, :, None, :] - A[:, None, :, :]           # (B, T, T, C): A_t - A_s
        below = torch.ones(T, T, dtype=torch.bool).tril()[None, :, :, None]
        weights = torch.where(below, diff, float("-inf")).exp()
        return torch.einsum("btsc,bsc->btc", weights, self.inp(x))


class CausalScanMaskTransposed(CausalScanLogSpace):
    """The (t, s) grid read as (s, t): the mask keeps s >= t, the later inputs."""

    BUG = "causal-leak"

    def forward(self, x):
        T = x.shape[1]
        A = torch.cumsum(F.logsigmoid(self.gate(x)), dim=1)
        diff = A[:, :, None, :] - A[:, None, :, :]
        below = torch.ones(T, T, dtype=torch.bool).triu()[None, :, :, None]
        weights = torch.where(below, diff, float("-inf")).exp()
        return torch.einsum("btsc,bsc->btc", weights, self.inp(x))  # BUG


class CausalForgetGatesCumprod(nn.Module):
    """Forget gates as a cumulative product: h_t = P_t * cumsum(u_s / P_s), P_t = prod f_{1..t}."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model):
        super().__init__()
        self.f = nn.Linear(d_model, d_model)
        self.u = nn.Linear(d_model, d_model)

    def forward(self, x):
        f = 0.5 + 0.5 * torch.sigmoid(self.f(x))   # in (0.5, 1): P stays far from 0 over T
        P = torch.cumprod(f, dim=1)
        return P * torch.cumsum(self.u(x) / P, dim=1)


class CausalEmaFFT(nn.Module):
    """MEGA's damped EMA as a long convolution: kernel alpha * (1 - alpha)^t, both sides zero
    padded to 2T so the FFT's circular convolution is a linear (causal) one."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model):
        super().__init__()
        self.alpha = nn.Parameter(torch.rand(d_model) * 0.5 + 0.25)

    def forward(self, x):
        T = x.shape[1]
        t = torch.arange(T, dtype=x.dtype)[:, None]
        kernel = self.alpha * (1 - self.alpha) ** t                      # (T, C)
        n = 2 * T
        y = torch.fft.irfft(torch.fft.rfft(x, n=n, dim=1) * torch.fft.rfft(kernel, n=n, dim=0),
                            n=n, dim=1)
        return y[:, :T]


class CausalEmaFFTCircular(CausalEmaFFT):
    """Padded to T only: the circular convolution wraps later positions round to the start."""

    BUG = "causal-leak"

    def forward(self, x):
        T = x.shape[1]
        t = torch.arange(T, dtype=x.dtype)[:, None]
        kernel = self.alpha * (1 - self.alpha) ** t
        y = torch.fft.irfft(torch.fft.rfft(x, dim=1) * torch.fft.rfft(kernel, dim=0), n=T, dim=1)  # BUG
        return y


# --- masks written other ways ----------------------------------------------------------------------

class CausalRotaryTable(_Heads):
    """RoPE from cos/sin tables built for ``max_len`` positions and sliced to T, with an
    ``arange`` comparison for the causal mask."""

    INIT = {"d_model": "C", "n_heads": "H", "max_len": 32}
    DIMS = {"d": 8}  # rotate_half needs an even head size

    def __init__(self, d_model, n_heads, max_len):
        super().__init__(d_model, n_heads)
        inv = 1.0 / 10000 ** (torch.arange(0, self.dk, 2).float() / self.dk)
        angles = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("cos", torch.cat([angles, angles], dim=-1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat([angles, angles], dim=-1).sin(), persistent=False)

    @staticmethod
    def rotate_half(t):
        a, b = t.chunk(2, dim=-1)
        return torch.cat([-b, a], dim=-1)

    def forward(self, x):
        q, k, v = self.split(x)
        T = q.shape[2]
        cos, sin = self.cos[:T], self.sin[:T]
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        pos = torch.arange(T)
        causal = pos[:, None] >= pos[None, :]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        scores = scores.masked_fill(~causal, float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class CausalRotaryMaskBackwards(CausalRotaryTable):
    """The comparison reads the wrong way round: each query keeps the later keys."""

    BUG = "causal-leak"

    def forward(self, x):
        q, k, v = self.split(x)
        T = q.shape[2]
        cos, sin = self.cos[:T], self.sin[:T]
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        pos = torch.arange(T)
        causal = pos[:, None] <= pos[None, :]  # BUG
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        scores = scores.masked_fill(~causal, float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class CausalFloatMaskBuffer(_Heads):
    """An additive mask buffer, -inf above the diagonal, built once for ``block_size`` and
    sliced to (T, T), and a LayerNorm over the features only."""

    INIT = {"d_model": "C", "n_heads": "H", "block_size": 16}

    def __init__(self, d_model, n_heads, block_size):
        super().__init__(d_model, n_heads)
        self.norm = nn.LayerNorm(d_model)
        self.register_buffer("bias", torch.full((block_size, block_size), float("-inf")).triu(1))

    def forward(self, x):
        q, k, v = self.split(self.norm(x))
        T = q.shape[2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk) + self.bias[:T, :T]
        return self.merge(torch.softmax(scores, dim=-1) @ v)


class _ConvNorm(nn.Module):
    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, d_model, norm):
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, 3)
        self.norm = norm


class CausalConvGroupNorm(_ConvNorm):
    """A causal conv stack normalised with GroupNorm on (B, C, T): each group's statistics are
    taken over every position, so position 0 reads the last one through the mean."""

    BUG = "causal-leak"

    def __init__(self, d_model):
        super().__init__(d_model, nn.GroupNorm(1, d_model))

    def forward(self, x):
        h = self.conv(F.pad(x.transpose(1, 2), (2, 0)))
        return self.norm(h).transpose(1, 2)  # BUG


class CausalConvLayerNorm(_ConvNorm):
    """The same stack with a LayerNorm over the channels of each position."""

    def __init__(self, d_model):
        super().__init__(d_model, nn.LayerNorm(d_model))

    def forward(self, x):
        h = self.conv(F.pad(x.transpose(1, 2), (2, 0)))
        return self.norm(h.transpose(1, 2))


# --- encoder-decoder: causal self-attention, cross-attention over the whole source -------------

class CausalDecoderBlock(nn.Module):
    """Target tokens attend causally among themselves and to every source position."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["tgt=B,T,C", "memory=B,S,C"]
    causal = True

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.n1, self.n2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, tgt, memory):
        T = tgt.shape[1]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        h = self.n1(tgt)
        x = tgt + self.self_attn(h, h, h, attn_mask=future, need_weights=False)[0]
        h = self.n2(x)
        return x + self.cross_attn(h, memory, memory, need_weights=False)[0]


class CausalDecoderMaskOnCross(CausalDecoderBlock):
    """The causal mask went to the wrong call: the self-attention sees the future."""

    BUG = "causal-leak"
    INPUTS = ["tgt=B,T,C", "memory=B,T,C"]

    def forward(self, tgt, memory):
        T = tgt.shape[1]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        h = self.n1(tgt)
        x = tgt + self.self_attn(h, h, h, need_weights=False)[0]  # BUG
        h = self.n2(x)
        return x + self.cross_attn(h, memory, memory, attn_mask=future, need_weights=False)[0]
