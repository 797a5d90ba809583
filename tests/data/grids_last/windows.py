"""Windowed attention over a grid of vectors kept channels last, (B, H, W, C): blocks unpack
four sizes from their input and apply their linear layers at every position, a stage merges
patches with nn.Unfold, and a model builds its stages from lists of one entry per stage. Nothing
here names an image or a width: shapetrace reads the layout from the code."""

import torch
from torch import nn


class Shift(nn.Module):
    def __init__(self, offset):
        super().__init__()
        self.offset = offset

    def forward(self, x):
        return torch.roll(x, shifts=(self.offset, self.offset), dims=(1, 2))


class WindowAttention(nn.Module):
    def __init__(self, dim, heads, head_dim, window_size, shifted):
        super().__init__()
        inner = heads * head_dim
        self.heads, self.head_dim, self.window_size = heads, head_dim, window_size
        self.scale = head_dim ** -0.5
        self.shifted = shifted
        if shifted:
            self.shift = Shift(-(window_size // 2))
            self.shift_back = Shift(window_size // 2)
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def merged(self, out, n):
        return out.transpose(1, 2).reshape(out.shape[0], n, self.heads * self.head_dim)

    def forward(self, x):
        if self.shifted:
            x = self.shift(x)
        b, n_h, n_w, _ = x.shape
        w = self.window_size
        rows, cols = n_h // w, n_w // w
        x = x.view(b, rows, w, cols, w, -1).permute(0, 1, 3, 2, 4, 5).reshape(b * rows * cols, w * w, -1)
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(t.shape[0], w * w, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        weights = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        out = self.to_out(self.merged(weights @ v, w * w))
        out = out.view(b, rows, cols, w, w, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, n_h, n_w, -1)
        if self.shifted:
            out = self.shift_back(out)
        return out


class WindowAttentionUnmerged(WindowAttention):
    """The heads put back without moving them next to the head size: tokens and heads mix."""

    def merged(self, out, n):
        return out.reshape(out.shape[0], n, self.heads * self.head_dim)


class GridBlock(nn.Module):
    def __init__(self, dim, heads, head_dim, window_size, shifted):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attention = WindowAttention(dim, heads, head_dim, window_size, shifted)
        self.mlp = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attention(self.norm(x))
        return x + self.mlp(x)


class PatchMerge(nn.Module):
    def __init__(self, in_channels, out_channels, factor):
        super().__init__()
        self.factor = factor
        self.unfold = nn.Unfold(kernel_size=factor, stride=factor)
        self.linear = nn.Linear(in_channels * factor ** 2, out_channels)

    def forward(self, x):
        b, c, h, w = x.shape
        rows, cols = h // self.factor, w // self.factor
        x = self.unfold(x).view(b, -1, rows, cols).permute(0, 2, 3, 1)
        return self.linear(x)


class Stage(nn.Module):
    def __init__(self, in_channels, width, depth, factor, heads, head_dim, window_size):
        super().__init__()
        assert depth % 2 == 0, "a stage pairs a plain block with a shifted one"
        self.merge = PatchMerge(in_channels, width, factor)
        self.blocks = nn.ModuleList(GridBlock(width, heads, head_dim, window_size, shifted=i % 2 == 1)
                                    for i in range(depth))

    def forward(self, x):
        x = self.merge(x)
        for block in self.blocks:
            x = block(x)
        return x.permute(0, 3, 1, 2)


class GridNet(nn.Module):
    def __init__(self, *, width, depths, heads, channels=3, head_dim=8, window_size=2, factors=(2, 2)):
        super().__init__()
        self.first = Stage(channels, width, depths[0], factors[0], heads[0], head_dim, window_size)
        self.second = Stage(width, 2 * width, depths[1], factors[1], heads[1], head_dim, window_size)
        self.head = nn.Linear(2 * width, 10)

    def forward(self, img):
        return self.head(self.second(self.first(img)).mean(dim=(2, 3)))


def grid_tiny(width=32, depths=(2, 2), heads=(2, 4), **kwargs):
    return GridNet(width=width, depths=depths, heads=heads, **kwargs)
