"""Attention 9: cross-attention, queries from one sequence, keys and values from another.

In an encoder-decoder (translation, or a decoder reading image features) the decoder's tokens
x (B, T, C) ask the questions and a second sequence, the context (B, S, C), answers them. The
scores are (B, H, T, S): one row per query, one column per context position. Nothing is
hidden: every query may read the whole context, so there is no causal mask.
"""

import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor

from reference_models.m06_multi_head import merge_heads, split_heads


class CrossAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd={n_embd} is not divisible by n_head={n_head}")
        self.n_embd = n_embd
        self.n_head = n_head
        self.head_size = n_embd // n_head
        self.query = nn.Linear(n_embd, n_embd, bias=bias)
        self.key = nn.Linear(n_embd, n_embd, bias=bias)
        self.value = nn.Linear(n_embd, n_embd, bias=bias)
        self.proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    @jaxtyped(typechecker=beartype)
    def forward(
        self, x: Float[Tensor, "B T C={self.n_embd}"], context: Float[Tensor, "B S C={self.n_embd}"]
    ) -> Float[Tensor, "B T C={self.n_embd}"]:
        q = split_heads(self.query(x), self.n_head)  # (B, H, T, d)
        k = split_heads(self.key(context), self.n_head)  # (B, H, S, d)
        v = split_heads(self.value(context), self.n_head)
        scores = q @ k.transpose(-2, -1) * self.head_size**-0.5  # (B, H, T, S)
        weights = self.attn_dropout(F.softmax(scores, dim=-1))  # over S, the context
        out = merge_heads(weights @ v)  # (B, H, T, d) -> (B, T, C)
        return self.resid_dropout(self.proj(out))
