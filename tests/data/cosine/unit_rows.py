"""Attention over queries and keys of unit length (cosine similarities): the temperature is the
code's choice (sqrt(d), a learned scale), no 1/sqrt(d) is owed; queries and keys that are only
RMS-normalised still owe it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def turn(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def unit(t, eps=1e-6):
    return t / t.norm(dim=-1, keepdim=True).clamp(min=eps)


class _Heads(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim, bias=False)
        angles = torch.arange(64).float()[:, None] / 10000 ** (
            torch.arange(0, self.head_dim, 2).float()[None] / self.head_dim)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def split(self, x):
        b, n, _ = x.shape
        return [t.view(b, n, self.heads, self.head_dim).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1)]

    def merge(self, out):
        b, _, n, _ = out.shape
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class NormalizedSDPA(_Heads):
    """F.normalize, then a rotation, then SDPA at scale sqrt(d): unit rows."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.qk_scale = nn.Parameter(torch.ones(self.head_dim))

    def forward(self, x):
        q, k, v = self.split(x)
        n = x.shape[1]
        q, k = F.normalize(q, dim=-1) * self.qk_scale, F.normalize(k, dim=-1) * self.qk_scale
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        q, k = turn(q, self.cos[:n], self.sin[:n]), turn(k, self.cos[:n], self.sin[:n])
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.head_dim ** 0.5)
        return self.merge(out)


class OwnNormMatmul(_Heads):
    """Its own L2 normalisation and a learned temperature, by matmul."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(heads, 1, 1)))

    def forward(self, x):
        q, k, v = self.split(x)
        scores = unit(q) @ unit(k).transpose(-2, -1) * self.logit_scale.exp()
        return self.merge(scores.softmax(dim=-1) @ v)


class RMSNormedScaledUp(_Heads):
    """RMS-normalised q and k (entries of unit size, rows of length sqrt(d)) multiplied by
    sqrt(d): scaled the wrong way, as any other attention."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.q_norm = nn.RMSNorm(self.head_dim)
        self.k_norm = nn.RMSNorm(self.head_dim)

    def forward(self, x):
        q, k, v = self.split(x)
        q, k = self.q_norm(q), self.k_norm(k)
        out = F.scaled_dot_product_attention(q, k, v, scale=self.head_dim ** 0.5)  # BUG
        return self.merge(out)
