"""A small diffusion U-Net of our own, in the style such code takes: an image side and the set
of levels that get attention given to the constructor, a timestep beside the image."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.sin(args), torch.cos(args)], dim=1)
    return F.pad(emb, (0, 1)) if dim % 2 else emb


class PixelAttention(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.qkv = nn.Conv2d(in_channels, 3 * in_channels, 1)
        self.proj = nn.Conv2d(in_channels, in_channels, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(x).reshape(b, 3, c, h * w).unbind(1)
        weights = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(c), dim=-1)
        out = (v @ weights.transpose(1, 2)).reshape(b, c, h, w)
        return x + self.proj(out)


class TinyUNet(nn.Module):
    def __init__(self, ch, in_channels, resolution, attn_resolutions, num_res_blocks, ch_mult=(1, 2)):
        super().__init__()
        self.ch = ch
        self.temb = nn.Linear(ch, ch)
        self.conv_in = nn.Conv2d(in_channels, ch, 3, padding=1)
        self.down = nn.ModuleList()
        curr_res = resolution
        for level, mult in enumerate(ch_mult):
            for _ in range(num_res_blocks):
                self.down.append(nn.Conv2d(ch, ch, 3, padding=1))
                if curr_res in attn_resolutions:
                    self.down.append(PixelAttention(ch))
            if level != len(ch_mult) - 1:
                self.down.append(nn.Conv2d(ch, ch, 3, stride=2, padding=1))
                curr_res = curr_res // 2
        self.conv_out = nn.Conv2d(ch, in_channels, 3, padding=1)

    def forward(self, x, t=None):
        assert t is not None
        h = self.conv_in(x) + self.temb(timestep_embedding(t, self.ch))[:, :, None, None]
        for layer in self.down:
            h = layer(h)
        return self.conv_out(F.interpolate(h, size=x.shape[-2:]))


class WideStack(nn.Module):
    """Far too big at a probe width: its layers are a hundred times as wide."""

    def __init__(self, width):
        super().__init__()
        self.up = nn.Linear(width, 100 * width)
        self.mid = nn.Linear(100 * width, 100 * width)

    def forward(self, x):
        return self.mid(self.up(x))


class FixedHugeTable(nn.Module):
    """Too big at any width: a table of sizes of its own."""

    def __init__(self, width):
        super().__init__()
        self.table = nn.Embedding(1_000_000, 128)
        self.out = nn.Linear(128, width)

    def forward(self, ids):
        return self.out(self.table(ids))
