"""Attention whose positions and mask are optional arguments its callers always pass."""

import torch
from torch import nn


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class PositionTable(nn.Module):
    def __init__(self, head_size, base=10000.0):
        super().__init__()
        inverse = 1.0 / (base ** (torch.arange(0, head_size, 2).float() / head_size))
        self.register_buffer("inverse", inverse, persistent=False)

    def forward(self, position_ids):
        angles = position_ids[..., None].float() * self.inverse  # (B, T, d/2)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos()[:, None], angles.sin()[:, None]


class RotaryAttention(nn.Module):
    """``position_ids`` defaults to None but is read unconditionally."""

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads, self.head_size = num_heads, hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size, bias=False)
        self.key = nn.Linear(hidden_size, hidden_size, bias=False)
        self.value = nn.Linear(hidden_size, hidden_size, bias=False)
        self.out = nn.Linear(hidden_size, hidden_size, bias=False)
        self.table = PositionTable(self.head_size)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, cache=None):
        batch, length, _ = hidden_states.shape

        def heads(t):
            return t.view(batch, length, self.num_heads, self.head_size).transpose(1, 2)

        q, k, v = heads(self.query(hidden_states)), heads(self.key(hidden_states)), \
            heads(self.value(hidden_states))
        cos, sin = self.table(position_ids)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        scores = q @ k.transpose(-2, -1) / self.head_size ** 0.5
        if attention_mask is not None:
            scores = scores + attention_mask
        mixed = scores.softmax(dim=-1) @ v
        return self.out(mixed.transpose(1, 2).reshape(batch, length, -1))


class MaskedAttention(nn.Module):
    """Not causal: only a mask a caller passes could make it so."""

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(2, 3) / (C // self.num_heads) ** 0.5
        if attention_mask is not None:
            scores = scores + attention_mask
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class AssertedMask(MaskedAttention):
    """Its default of None is no way to call it: the code asserts that a mask was given."""

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(2, 3) / (C // self.num_heads) ** 0.5
        assert attention_mask is not None
        scores = scores + attention_mask
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class RotaryBlock(nn.Module):
    """A block that hands its optional mask and positions on by keyword: the positions, read
    only inside the attention, sit after a mask left out."""

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        self.attn = RotaryAttention(hidden_size, num_heads)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, cache=None):
        mixed = self.attn(self.norm(hidden_states), attention_mask=attention_mask,
                          position_ids=position_ids, cache=cache)
        return hidden_states + mixed
