"""Rotary positions applied inside a TorchScript helper: the bug is only visible when the
helper's ops are traced as Python."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.jit.script
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@torch.jit.script
def apply_rotary_wrong(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: (B, H, T, d); cos, sin: (T, d) laid along the heads instead of the positions
    return x * cos[: x.size(1)] + rotate_half(x) * sin[: x.size(1)]  # BUG


@torch.jit.script
def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos[: x.size(2)] + rotate_half(x) * sin[: x.size(2)]


class RotaryScripted(nn.Module):
    def __init__(self, n_embd, n_head, max_len=64):
        super().__init__()
        self.n_head, self.hd = n_head, n_embd // n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = torch.outer(torch.arange(max_len).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def rotate(self, t):
        return apply_rotary(t, self.cos, self.sin)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, self.hd).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        q, k = self.rotate(q), self.rotate(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


class RotaryScriptedWrongAxis(RotaryScripted):
    def rotate(self, t):
        return apply_rotary_wrong(t, self.cos, self.sin)
