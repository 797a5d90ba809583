"""Modules built from one config object whose fields carry the part of the model they size
(``txt_``, ``img_``), with no annotation saying what the config is."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledNorm(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.eps = cfg.txt_norm_eps
        self.gain = nn.Parameter(torch.ones(cfg.txt_embed_dim))

    def forward(self, x):
        return self.gain * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class GroupedTextAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads, self.n_kv = cfg.txt_n_heads, cfg.txt_n_kv_heads
        self.head = cfg.txt_embed_dim // cfg.txt_n_heads
        self.q = nn.Linear(cfg.txt_embed_dim, cfg.txt_embed_dim, bias=False)
        self.kv = nn.Linear(cfg.txt_embed_dim, 2 * self.n_kv * self.head, bias=False)
        self.out = nn.Linear(cfg.txt_embed_dim, cfg.txt_embed_dim, bias=False)
        self.base = cfg.txt_rope_base

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.n_heads, self.head).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.head).permute(2, 0, 3, 1, 4)
        inv = self.base ** (-torch.arange(0, self.head, 2, dtype=x.dtype) / self.head)
        angles = torch.arange(T, dtype=x.dtype)[:, None] * inv
        cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)

        def rotate(t):
            a, b = t.chunk(2, dim=-1)
            return t * cos + torch.cat((-b, a), dim=-1) * sin

        q, k = rotate(q), rotate(k)
        k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PatchEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.patches = (cfg.img_image_size // cfg.img_patch_size) ** 2
        self.embed = nn.Conv2d(3, cfg.img_embed_dim, cfg.img_patch_size, stride=cfg.img_patch_size)
        self.pos = nn.Parameter(torch.zeros(1, self.patches, cfg.img_embed_dim))
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(cfg.img_embed_dim, cfg.img_n_heads,
                                                               batch_first=True, dropout=0.0)
                                    for _ in range(cfg.img_n_layers))

    def forward(self, images):
        x = self.embed(images).flatten(2).transpose(1, 2) + self.pos
        for block in self.blocks:
            x = block(x)
        return x


class TemperedScores(nn.Module):
    """Divides the scores by a temperature its config holds, which no name gives."""

    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.txt_n_heads
        self.qkv = nn.Linear(cfg.txt_embed_dim, 3 * cfg.txt_embed_dim)
        self.temper = cfg.txt_softness

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(C, -1))
        scores = q @ k.transpose(-2, -1) / (math.sqrt(C // self.heads) * self.temper)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
