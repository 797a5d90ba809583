"""Biases by distance on the attention scores: ALiBi as a slope times key minus query under a
causal mask, as a slope times the key's position (the query's share cancels in the softmax),
as minus a slope times |i - j| for an encoder, and a learned table of offsets; each is quiet.
The buggy twins give the slope the sign that favours far keys: query minus key times positive
slopes under a causal mask, and plus a slope times |i - j|."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _slopes(heads):
    start = 2 ** (-8 / heads)
    return torch.tensor([start ** (h + 1) for h in range(heads)])


class AlibiCausal(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.register_buffer("slopes", _slopes(heads))

    def offsets(self, T):
        pos = torch.arange(T)
        return (pos[None, :] - pos[:, None]).float()  # key minus query: <= 0 for earlier keys

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        bias = self.slopes.view(-1, 1, 1) * self.offsets(T)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = (scores + bias).masked_fill(causal, float("-inf"))
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class AlibiCausalFlipped(AlibiCausal):
    BUG = "attention-textbook"
    FOUND_AT = "bias = self.slopes.view(-1, 1, 1) * self.offsets(T)"  # the sign is the product's

    def offsets(self, T):
        pos = torch.arange(T)
        return (pos[:, None] - pos[None, :]).float()  # BUG


class AlibiKeyPositions(AlibiCausal):
    """The bias by key position alone, masked into one additive term with the causal mask."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        mask = torch.full((T, T), float("-inf")).triu(1)
        bias = self.slopes.view(-1, 1, 1) * torch.arange(T).float().view(1, 1, T) + mask
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class AlibiEncoder(AlibiCausal):
    """Both sides: minus a slope times the distance."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        distance = self.offsets(T).abs()
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        scores = scores - self.slopes.view(-1, 1, 1) * distance
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class AlibiEncoderFlipped(AlibiCausal):
    BUG = "attention-textbook"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        distance = self.offsets(T).abs()
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        scores = scores + self.slopes.view(-1, 1, 1) * distance  # BUG
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class LearnedOffsets(nn.Module):
    """A learned bias per head and clipped offset (random at initialisation)."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, reach=8):
        super().__init__()
        self.heads, self.reach = heads, reach
        self.qkv = nn.Linear(dim, 3 * dim)
        self.table = nn.Parameter(torch.randn(heads, 2 * reach + 1) * 0.5)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T)
        offsets = (pos[None, :] - pos[:, None]).clamp(-self.reach, self.reach) + self.reach
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads) + self.table[:, offsets]
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
