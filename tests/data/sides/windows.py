"""Window attention in the shifted-window style, and a depthwise mixer: the window's side, the
grid's side and the kernel's size are arguments without defaults."""

import torch
import torch.nn.functional as F
from torch import nn


class LocalWindowAttention(nn.Module):
    """Attention inside one window of window_size x window_size tokens, with a learned bias
    per relative offset."""

    def __init__(self, dim, window_size, num_heads):
        super().__init__()
        self.window_size, self.num_heads = window_size, num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.bias_table = nn.Parameter(torch.zeros((2 * window_size - 1) ** 2, num_heads))
        coords = torch.stack(torch.meshgrid(torch.arange(window_size), torch.arange(window_size), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window_size - 1
        self.register_buffer("index", rel[..., 0] * (2 * window_size - 1) + rel[..., 1])
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.bias_table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = (attn + bias.unsqueeze(0)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class GridWindowBlock(nn.Module):
    """Cuts a grid of input_resolution x input_resolution tokens into windows."""

    def __init__(self, dim, input_resolution, num_heads, window_size):
        super().__init__()
        self.side, self.window = input_resolution, window_size
        self.norm = nn.LayerNorm(dim)
        self.attn = LocalWindowAttention(dim, window_size, num_heads)

    def forward(self, x):
        b, n, c = x.shape
        s, w = self.side, self.window
        h = self.norm(x).view(b, s // w, w, s // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)
        h = self.attn(h).view(b, s // w, s // w, w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(b, n, c)
        return x + h


class DepthwiseMixer(nn.Module):
    def __init__(self, dim, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, kernel_size, padding=kernel_size // 2, groups=dim)

    def forward(self, x):
        return x + F.gelu(self.conv(x.transpose(1, 2))).transpose(1, 2)


class LocalWindowAttentionOverHeads(LocalWindowAttention):
    """The bug: the weights are normalised over the heads."""

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.bias_table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = (attn + bias.unsqueeze(0)).softmax(dim=1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class PooledMixer(nn.Module):
    """A kernel size kept and used by a pooling: nothing it is handed to names it."""

    def __init__(self, dim, kernel_size):
        super().__init__()
        self.k = kernel_size
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        pooled = F.avg_pool1d(x.transpose(1, 2), self.k, stride=1, padding=self.k // 2)
        return x + self.proj(pooled.transpose(1, 2))


class RoundedMlp(nn.Module):
    """Its hidden width a ratio of the model's, rounded up to a multiple: neither has a default."""

    def __init__(self, dim, mlp_ratio, multiple_of):
        super().__init__()
        hidden = int(dim * mlp_ratio)
        hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
        self.up, self.down = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


class BatchCache(nn.Module):
    """A cache made for the batch its constructor is given."""

    def __init__(self, batch_size, max_len, dim):
        super().__init__()
        self.register_buffer("keys", torch.zeros(batch_size, max_len, dim))

    def forward(self, x):
        self.keys[:, : x.shape[1]] = x
        return self.keys[:, : x.shape[1]].clone()


class IndexedPatches(nn.Module):
    """Its patch given as a pair of sides read by index (``patch_size[0] * patch_size[1]``)."""

    def __init__(self, dim, patch_size):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(dim * patch_size[0] * patch_size[1], dim)

    def forward(self, x):
        b, n, c = x.shape
        p, q = self.patch_size[0], self.patch_size[1]
        groups = x.reshape(b, n // (p * q), p * q * c) if n % (p * q) == 0 else x.repeat(1, 1, p * q)
        return self.proj(groups)


class PairGridBlock(nn.Module):
    """Its grid given as a pair of sides, unpacked in forward, which checks the token count."""

    def __init__(self, dim, input_resolution, num_heads, window_size=2):
        super().__init__()
        self.input_resolution, self.window = input_resolution, window_size
        self.norm = nn.LayerNorm(dim)
        self.attn = LocalWindowAttention(dim, window_size, num_heads)

    def forward(self, x):
        H, W = self.input_resolution
        b, n, c = x.shape
        assert n == H * W, "input feature has wrong size"
        w = self.window
        h = self.norm(x).view(b, H // w, w, W // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)
        h = self.attn(h).view(b, H // w, W // w, w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(b, n, c)
        return x + h
