"""Attention 6: multi-head attention with weight splits (Raschka's ``MultiHeadAttention``).

One (C x C) projection each for queries, keys and values computes all heads at once. The
heads are then split off the last axis: ``view(B, T, H, d)`` cuts C into H blocks of d, and
``transpose(1, 2)`` moves H in front of T so that the matmuls run per head on (T, d) matrices.
Merging undoes both steps in reverse order: transpose back to (B, T, H, d), then merge the two
adjacent axes H and d into C. Skipping either transpose keeps every shape right and scrambles
the data, which is why ``split_heads`` and ``merge_heads`` are checked helpers here.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor


@jaxtyped(typechecker=beartype)
def split_heads(x: Float[Tensor, "B T C"], n_head: int) -> Float[Tensor, "B H={n_head} T d=C//{n_head}"]:
    """(B, T, C) -> (B, H, T, d): split C into H heads of size d, then move H before T."""
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)


@jaxtyped(typechecker=beartype)
def merge_heads(x: Float[Tensor, "B H T d"]) -> Float[Tensor, "B T C=H*d"]:
    """(B, H, T, d) -> (B, T, C): move H back next to d, then merge the two into C."""
    B, H, T, d = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.0,
                 causal: bool = True, bias: bool = False):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd={n_embd} is not divisible by n_head={n_head}")
        self.n_embd = n_embd
        self.n_head = n_head
        self.head_size = n_embd // n_head
        self.causal = causal
        self.query = nn.Linear(n_embd, n_embd, bias=bias)
        self.key = nn.Linear(n_embd, n_embd, bias=bias)
        self.value = nn.Linear(n_embd, n_embd, bias=bias)
        self.proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        tril = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("tril", tril, persistent=False)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T C={self.n_embd}"]:
        T = x.size(1)
        q = split_heads(self.query(x), self.n_head)  # (B, H, T, d)
        k = split_heads(self.key(x), self.n_head)
        v = split_heads(self.value(x), self.n_head)
        scores = q @ k.transpose(-2, -1) * self.head_size**-0.5  # (B, H, T, T)
        if self.causal:
            scores = scores.masked_fill(~self.tril[:T, :T], float("-inf"))
        weights = self.attn_dropout(F.softmax(scores, dim=-1))  # over the keys, the last axis
        out = merge_heads(weights @ v)  # (B, H, T, d) -> (B, T, C)
        return self.resid_dropout(self.proj(out))
