"""Learned tables read through an index fixed when the module was built (relative-position
bias tables): an index that reaches only some of the table's rows leaves the others without
effect. Each buggy module marks the line that made the index with ``# BUG`` and the line
where the table is read through it with ``# READ``; the correct
ones (every row reachable, or an index that depends on the input or on its length, or rows
left out by design) stay quiet."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _window_coords(*window):
    """(n, len(window)) integer coordinates of the n tokens of a window, row-major."""
    grids = torch.meshgrid(*[torch.arange(w) for w in window], indexing="ij")
    return torch.stack(grids).flatten(1).t()


class WindowAttention(nn.Module):
    """Multi-head attention over the tokens of a window, with a learned bias per relative
    offset and head; subclasses say how an offset becomes a row of the table."""

    def __init__(self, dim, num_heads, window=(3, 5)):
        super().__init__()
        self.num_heads = num_heads
        self.window = tuple(window)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.bias_table = nn.Parameter(torch.randn(self.table_rows(), num_heads) * 0.02)
        coords = _window_coords(*self.window)
        offsets = coords[:, None, :] - coords[None, :, :]  # (n, n, len(window))
        self.register_buffer("bias_index", self.flatten_offsets(offsets), persistent=False)

    def table_rows(self):
        rows = 1
        for w in self.window:
            rows *= 2 * w - 1
        return rows

    def flatten_offsets(self, offsets):
        """Row-major over the shifted offsets: each distinct offset its own row."""
        index = torch.zeros(offsets.shape[:2], dtype=torch.long)
        for axis, w in enumerate(self.window):
            index = index * (2 * w - 1) + offsets[..., axis] + (w - 1)
        return index

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads) \
            .permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) * (C // self.num_heads) ** -0.5
        bias = self.bias_table[self.bias_index.view(-1)].view(N, N, -1)
        scores = scores + bias.permute(2, 0, 1).unsqueeze(0)
        y = scores.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, N, C))


class OffsetsSummed(WindowAttention):
    """The shifted offsets are added up instead of flattened: (1, 0) and (0, 1) share a row,
    and the rows past the largest sum are never read."""

    def flatten_offsets(self, offsets):
        index = torch.zeros(offsets.shape[:2], dtype=torch.long)
        for axis, w in enumerate(self.window):
            index = index + offsets[..., axis] + (w - 1)  # BUG
        return index

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads) \
            .permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) * (C // self.num_heads) ** -0.5
        bias = self.bias_table[self.bias_index.view(-1)].view(N, N, -1)  # READ
        scores = scores + bias.permute(2, 0, 1).unsqueeze(0)
        y = scores.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, N, C))


class VolumeStrideTooSmall(nn.Module):
    """A 3D window whose depth offset is multiplied by the height's span alone (the width's
    is left out of the stride): depth and height offsets overlap in the table."""

    def __init__(self, dim, num_heads, window=(2, 3, 3)):
        super().__init__()
        self.num_heads = num_heads
        wd, wh, ww = window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.table = nn.Parameter(
            torch.randn((2 * wd - 1) * (2 * wh - 1) * (2 * ww - 1), num_heads) * 0.02)
        coords = _window_coords(wd, wh, ww)
        rel = (coords[:, None, :] - coords[None, :, :]) + torch.tensor([wd - 1, wh - 1, ww - 1])
        index = rel[..., 0] * (2 * wh - 1) + rel[..., 1] * (2 * ww - 1) + rel[..., 2]  # BUG
        self.register_buffer("rel_index", index)

    def forward(self, x):
        B, N, C = x.shape
        H = self.num_heads
        q, k, v = self.qkv(x).view(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.einsum("bhnd,bhmd->bhnm", q, k) / (C // H) ** 0.5
        bias = self.table[self.rel_index.flatten()].reshape(N, N, H)  # READ
        att = att + bias.permute(2, 0, 1)
        out = torch.einsum("bhnm,bhmd->bhnd", att.softmax(-1), v)
        return self.proj(out.transpose(1, 2).flatten(2))


class VolumeAttention(VolumeStrideTooSmall):
    """The same 3D window with the full strides: every row reachable."""

    def __init__(self, dim, num_heads, window=(2, 3, 3)):
        super().__init__(dim, num_heads, window)
        wd, wh, ww = window
        coords = _window_coords(wd, wh, ww)
        rel = (coords[:, None, :] - coords[None, :, :]) + torch.tensor([wd - 1, wh - 1, ww - 1])
        self.rel_index = (rel[..., 0] * (2 * wh - 1) + rel[..., 1]) * (2 * ww - 1) + rel[..., 2]


class WindowWithClassToken(WindowAttention):
    """Three more rows for the class token (to it, from it, to itself), all in the index."""

    def table_rows(self):
        return super().table_rows() + 3

    def flatten_offsets(self, offsets):
        n = offsets.shape[0]
        index = torch.full((n + 1, n + 1), 0, dtype=torch.long)
        index[1:, 1:] = super().flatten_offsets(offsets)
        rows = super().table_rows()
        index[0, :], index[:, 0], index[0, 0] = rows, rows + 1, rows + 2
        return index

    def forward(self, x):
        cls = x.mean(1, keepdim=True)
        return super().forward(torch.cat([cls, x], dim=1))[:, 1:]


class ClampedDistances(nn.Module):
    """Distances clipped to +-max_distance, built once for the longest sequence: sequences
    shorter than max_distance never reach the outer rows, by design."""

    def __init__(self, n_embd, n_head, block_size, max_distance=16):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.distance_bias = nn.Parameter(torch.randn(2 * max_distance + 1, n_head) * 0.02)
        pos = torch.arange(block_size)
        rel = (pos[None, :] - pos[:, None]).clamp(-max_distance, max_distance) + max_distance
        self.register_buffer("distance_index", rel)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        bias = self.distance_bias[self.distance_index[:T, :T]].permute(2, 0, 1)
        att = (q @ k.transpose(-2, -1)) * (C // self.n_head) ** -0.5 + bias
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class ClampedDistancesWhole(ClampedDistances):
    """The same table read through the whole index (the sequence is as long as the block)."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        bias = F.embedding(self.distance_index, self.distance_bias).permute(2, 0, 1)
        att = (q @ k.transpose(-2, -1)) * (C // self.n_head) ** -0.5 + bias[:, :T, :T]
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class PositionsFromOne(nn.Module):
    """Positions counted from 1, row 0 kept for padding (``padding_idx``): never read."""

    def __init__(self, n_embd, block_size):
        super().__init__()
        self.pos = nn.Embedding(block_size + 1, n_embd, padding_idx=0)
        self.register_buffer("positions", torch.arange(1, block_size + 1))
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.out(x + self.pos(self.positions)[: x.shape[1]])


class PositionsSliced(nn.Module):
    """A table of positions for the longest sequence, read for the first T."""

    def __init__(self, n_embd, block_size):
        super().__init__()
        self.pos = nn.Embedding(block_size, n_embd)
        self.register_buffer("position_ids", torch.arange(block_size).unsqueeze(0))
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.out(x + self.pos(self.position_ids[:, : x.shape[1]]))


class TokensAndPositions(nn.Module):
    """Rows chosen by the input's tokens: which are read depends on the input."""

    def __init__(self, vocab_size, n_embd):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        return self.head(self.tok(idx))


class BucketedDistances(nn.Module):
    """T5's buckets, built once for the longest sequence: exact for near distances, growing
    with the log of far ones, a half of the table for each direction. A sequence of the probe's
    length reaches only some buckets of each half, by design."""

    def __init__(self, n_embd, n_head, block_size, num_buckets=32, max_distance=128):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.bucket_bias = nn.Embedding(num_buckets, n_head)
        pos = torch.arange(block_size)
        rel = pos[None, :] - pos[:, None]
        half = num_buckets // 2
        bucket = (rel > 0).long() * half
        distance = rel.abs()
        exact = half // 2
        far = exact + (torch.log(distance.float().clamp(min=1) / exact)
                       / math.log(max_distance / exact) * (half - exact)).long()
        bucket = bucket + torch.where(distance < exact, distance, far.clamp(max=half - 1))
        self.register_buffer("buckets", bucket)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        bias = self.bucket_bias(self.buckets).permute(2, 0, 1)[:, :T, :T]
        att = (q @ k.transpose(-2, -1)) * (C // self.n_head) ** -0.5 + bias
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class BucketedDistancesWhole(BucketedDistances):
    """The same buckets read whole: the module runs at the length it was built for."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        bias = self.bucket_bias(self.buckets).permute(2, 0, 1)
        att = (q @ k.transpose(-2, -1)) * (C // self.n_head) ** -0.5 + bias
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
