"""Modules whose sizes come from names, hand-offs and grids that earlier readings missed: a
grouped-query attention that names its heads ``query_heads``, a block with a required
stochastic-depth rate, a cache sized for a batch, a single-head subclass that hands its width
on twice, tokens folded back into a square grid, and a config whose head count a reading
would reset."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedHeads(nn.Module):
    def __init__(self, width, query_heads=8, kv_heads=4):
        super().__init__()
        if query_heads % kv_heads != 0:
            raise ValueError(f"query_heads ({query_heads}) must be divisible by kv_heads ({kv_heads})")
        self.qh, self.kvh, self.hd = query_heads, kv_heads, width // query_heads
        self.q = nn.Linear(width, query_heads * self.hd)
        self.kv = nn.Linear(width, 2 * kv_heads * self.hd)
        self.out = nn.Linear(query_heads * self.hd, width)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.qh, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.kvh, self.hd).permute(2, 0, 3, 1, 4)
        k = k.repeat_interleave(self.qh // self.kvh, dim=1)
        v = v.repeat_interleave(self.qh // self.kvh, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class DepthDropBlock(nn.Module):
    def __init__(self, width, drop_path):
        super().__init__()
        self.rate = drop_path
        self.norm = nn.LayerNorm(width)
        self.mix = nn.Linear(width, width)

    def forward(self, x):
        y = self.mix(self.norm(x))
        if self.training and self.rate > 0:
            keep = torch.rand(x.shape[0], 1, 1) >= self.rate
            y = y * keep / (1 - self.rate)
        return x + y


class CachedKeys(nn.Module):
    def __init__(self, width, max_batch_size, max_len=64):
        super().__init__()
        self.register_buffer("keys", torch.zeros(max_batch_size, max_len, width))
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, _ = x.shape
        k = self.proj(x)
        self.keys[:b, :t] = k.detach()
        return k + self.keys[:b, :t]


class LinearMix(nn.Module):
    def __init__(self, dim, heads=4, dim_head=32):
        super().__init__()
        self.heads = heads
        inner = heads * dim_head
        self.to_qkv = nn.Conv2d(dim, inner * 3, 1, bias=False)
        self.to_out = nn.Conv2d(inner, dim, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.to_qkv(x).flatten(2).chunk(3, dim=1)
        q = q.reshape(b, self.heads, -1, h * w)
        k = k.reshape(b, self.heads, -1, h * w).softmax(dim=-1)
        v = v.reshape(b, self.heads, -1, h * w)
        context = torch.einsum("bhdn,bhen->bhde", k, v)
        out = torch.einsum("bhde,bhdn->bhen", context, q)
        return self.to_out(out.reshape(b, -1, h, w))


class SingleHeadMix(LinearMix):
    def __init__(self, channels_in):
        super().__init__(dim=channels_in, heads=1, dim_head=channels_in)


class TokensToImage(nn.Module):
    def __init__(self, in_chans=32, out_chans=3):
        super().__init__()
        self.conv = nn.Conv2d(in_chans, out_chans, 3, padding=1)

    def forward(self, x):
        b, n, c = x.shape
        side = int(math.sqrt(n))
        grid = x.transpose(1, 2).reshape(b, c, side, side)
        return self.conv(grid)


@dataclass
class TableArgs:
    dim: int = 256
    n_head: int = 8
    max_len: int = 64


class TableAttention(nn.Module):
    def __init__(self, cfg: TableArgs):
        super().__init__()
        assert cfg.dim % cfg.n_head == 0
        self.heads = cfg.n_head
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)

    def forward(self, x, table=None):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, self.heads, 3, -1, 2).permute(3, 0, 2, 1, 4, 5)
        q = (q * table[:t]).flatten(-2)  # rotated in pairs by a table the caller hands in
        y = F.scaled_dot_product_attention(q, k.flatten(-2), v.flatten(-2))
        return y.transpose(1, 2).reshape(b, t, c)


class IgnoresItsMask(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.heads = n_heads
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, queries, keys, values, attn_mask):
        b, t, c = queries.shape
        scores = torch.einsum("btc,bsc->bts", queries, keys) / math.sqrt(c)
        return self.proj(scores.softmax(dim=-1) @ values)


class GridTable(nn.Module):
    def forward(self, h: int, w: int, embed_dim: int) -> torch.Tensor:
        assert embed_dim % 2 == 0, embed_dim
        rows, cols = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
        freqs = 1.0 / 100 ** (torch.arange(embed_dim // 4).float() / (embed_dim // 4))
        parts = [f(p.reshape(-1, 1) * freqs) for p in (rows, cols) for f in (torch.sin, torch.cos)]
        return torch.cat(parts, dim=1)


class DemandsMask(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x, mask=None):
        assert mask is not None, "this attention needs its padding mask"
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        return scores.softmax(dim=-1) @ v


class SharedBias(nn.Module):
    def __init__(self, n_head, n_feat, bias_u):
        super().__init__()
        self.h, self.dk = n_head, n_feat // n_head
        self.qkv = nn.Linear(n_feat, 3 * n_feat)
        if bias_u is None:
            self.bias_u = nn.Parameter(torch.zeros(self.h, self.dk))
        else:
            self.bias_u = bias_u

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        q = q + self.bias_u[:, None, :]
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, c)


class StrictGrouped(GroupedHeads):
    def __init__(self, width, query_heads=8, kv_heads=4):
        super().__init__(width, query_heads, kv_heads)
        if (width // query_heads) % 8:
            raise ValueError(f"head_dim ({width // query_heads}) must be divisible by 8")


class GroupedStack(nn.Module):
    def __init__(self, dim, heads, depth):
        super().__init__()
        self.layers = nn.ModuleList(StrictGrouped(dim, heads) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class StepEmbedding(nn.Module):
    def __init__(self, hidden_size, freq_size=32):
        super().__init__()
        self.freq_size = freq_size
        self.mlp = nn.Sequential(nn.Linear(freq_size, hidden_size), nn.SiLU(),
                                 nn.Linear(hidden_size, hidden_size))

    def forward(self, t, use_half=False):
        half = self.freq_size // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half).float() / half)
        angles = t[:, None].float() * freqs[None]
        table = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)
        return self.mlp(table.half() if use_half else table)


class NeedsSetup(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def setup_cache(self, length):
        self.cache = torch.tril(torch.ones(length, length, dtype=torch.bool))

    def forward(self, x):
        t = x.shape[1]
        scores = (x @ x.transpose(1, 2)).masked_fill(~self.cache[:t, :t], float("-inf"))
        return self.proj(scores.softmax(dim=-1) @ x)


class StripAttention(nn.Module):
    """Rows cut into strips of ``width`` and the strips stacked into the batch, attended by
    an nn.MultiheadAttention over half the channels (batch_first, as the strips are laid out)."""

    def __init__(self, d_model, nhead, width=3):
        super().__init__()
        self.width = width
        self.attn = nn.MultiheadAttention(d_model // 2, nhead // 2, batch_first=True)
        self.out = nn.Conv2d(d_model // 2, d_model, 1)

    def forward(self, src):
        from einops import rearrange

        b, c, h, w = src.shape
        strips = rearrange(src[:, : c // 2], "b c (h1 h2) w -> (b h1) (h2 w) c", h2=self.width)
        mixed = self.attn(strips, strips, strips, need_weights=False)[0]
        return self.out(rearrange(mixed, "(b h1) (h2 w) c -> b c (h1 h2) w", h2=self.width, b=b))


class NanTable(nn.Module):
    """A position table its constructor divides by a width that is a tensor of zeros there."""

    def __init__(self, d_model, n_head, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).float()[:, None]
        width = torch.zeros(d_model)  # meant: torch.tensor(float(d_model))
        self.register_buffer("table", torch.sin(pos * torch.arange(d_model).float() / width))
        self.h = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        b, t, c = x.shape
        x = x + self.table[:t]
        q, k, v = self.qkv(x).view(b, t, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, c)


class MaskedMix(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])).masked_fill(~mask[:, None, :], float("-inf"))
        return scores.softmax(dim=-1) @ v


class PreNormWrap(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class WrappedStack(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.block = PreNormWrap(dim, MaskedMix(dim))

    def forward(self, x, mask):
        return x + self.block(x, mask=mask)


class NanScores(nn.Module):
    """Scores scaled right, by 1/sqrt(d), on a NaN its constructor made (0/0 in a position table)."""

    def __init__(self, d_model, n_head, max_len=64):
        super().__init__()
        self.h = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        index = torch.arange(d_model).float()
        self.register_buffer("table", torch.sin(torch.arange(max_len).float()[:, None] * (index / index)))

    def forward(self, x):
        b, t, c = x.shape
        x = x + self.table[:t]
        q, k, v = self.qkv(x).view(b, t, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(c // self.h)).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, t, c)
