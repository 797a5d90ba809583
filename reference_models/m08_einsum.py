"""Attention 8: multi-head attention written with einsum.

Naming every axis makes the transposes disappear: queries and keys stay (B, T, H, d), with T
called q for queries and k for keys, and ``bqhd,bkhd->bhqk`` contracts d for every pair of
positions. ``bhqk,bkhd->bqhd`` then contracts the keys with the values and leaves the result in
(B, T, H, d), where H and d are adjacent: merging them into C is a plain reshape.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor


class EinsumAttention(nn.Module):
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
        B, T, C = x.shape
        H, d = self.n_head, self.head_size
        q = self.query(x).view(B, T, H, d)
        k = self.key(x).view(B, T, H, d)
        v = self.value(x).view(B, T, H, d)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * d**-0.5  # (B, H, T, T)
        if self.causal:
            scores = scores.masked_fill(~self.tril[:T, :T], float("-inf"))
        weights = self.attn_dropout(F.softmax(scores, dim=-1))  # over k, the keys
        out = torch.einsum("bhqk,bkhd->bqhd", weights, v)  # (B, T, H, d)
        return self.resid_dropout(self.proj(out.reshape(B, T, C)))
