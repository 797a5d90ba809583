"""Attention 7: one fused projection for queries, keys and values (nanoGPT's ``c_attn``).

A single (3C x C) linear layer replaces the three (C x C) ones: one matmul instead of three.
Its output (B, T, 3C) is split on the last axis into q, k and v, in that order, each (B, T, C),
and from there the computation is the one of ``m06_multi_head``.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor

from reference_models.m06_multi_head import merge_heads, split_heads


class FusedQKVAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.0,
                 causal: bool = True, bias: bool = False):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd={n_embd} is not divisible by n_head={n_head}")
        self.n_embd = n_embd
        self.n_head = n_head
        self.head_size = n_embd // n_head
        self.causal = causal
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        tril = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("tril", tril, persistent=False)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T C={self.n_embd}"]:
        T = x.size(1)
        q, k, v = self.qkv(x).split(self.n_embd, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q, k, v = (split_heads(t, self.n_head) for t in (q, k, v))  # each (B, H, T, d)
        scores = q @ k.transpose(-2, -1) * self.head_size**-0.5  # (B, H, T, T)
        if self.causal:
            scores = scores.masked_fill(~self.tril[:T, :T], float("-inf"))
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        out = merge_heads(weights @ v)
        return self.resid_dropout(self.proj(out))
