"""Attention modules whose forward works only at some sizes of its input: one lays the tokens
out on a grid of its own side and makes an empty position table below a whole grid; one
rotates pairs of the head's features and checks the rotated part fits the head."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def scale_by_position(x, pos):
    freq = 1.0 / 10000 ** (torch.arange(x.shape[-1], dtype=x.dtype) / x.shape[-1])
    angle = pos[:, None].to(x.dtype) * freq  # (N, d)
    return x * angle.cos() + x.flip(-1) * angle.sin()


class GridAttention(nn.Module):
    """Tokens are frames of ``grid_size * grid_size`` patches: the positions come from the grid."""

    def __init__(self, dim, num_heads=8, grid_size=14):
        super().__init__()
        self.num_heads = num_heads
        self.grid_size = grid_size
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        frames = N // (self.grid_size * self.grid_size)
        ids = torch.arange(frames * self.grid_size * self.grid_size)
        q, k, v = self.qkv(x).view(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k = scale_by_position(q, ids), scale_by_position(k, ids)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, N, C))


class PairedRotary(nn.Module):
    """Rotates the first ``2 * ceil(d / 2)`` features of each head, which must fit the head."""

    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        head = dim // n_heads
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, head, 2).float() / head))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        freqs = torch.arange(T).float()[:, None] * self.inv_freq
        ro_dim = 2 * freqs.shape[-1]
        assert ro_dim <= q.shape[-1]
        cos = torch.cat((freqs, freqs), dim=-1).cos()
        sin = torch.cat((freqs, freqs), dim=-1).sin()

        def turn(t):
            t1, t2 = t[..., : ro_dim // 2], t[..., ro_dim // 2:]
            return t * cos + torch.cat((-t2, t1), dim=-1) * sin

        y = F.scaled_dot_product_attention(turn(q), turn(k), v)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))
