"""Attention 5: multi-head attention as a list of independent heads.

H heads of size d = C / H run side by side on the same input; their (B, T, d) outputs are
concatenated on the last axis back to (B, T, H*d) = (B, T, C) and mixed by a final projection.
This is the easiest version to read and the slowest to run: ``m06_multi_head`` computes the
same thing with one matmul per projection.
"""

import torch
import torch.nn as nn
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor

from reference_models.m03_head import Head


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.0, causal: bool = True,
                 bias: bool = False):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd={n_embd} is not divisible by n_head={n_head}")
        self.n_embd = n_embd
        self.n_head = n_head
        head_size = n_embd // n_head
        self.heads = nn.ModuleList(
            [Head(n_embd, head_size, causal=causal, bias=bias, dropout=dropout) for _ in range(n_head)]
        )
        self.proj = nn.Linear(n_head * head_size, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T C={self.n_embd}"]:
        out = torch.cat([head(x) for head in self.heads], dim=-1)  # H x (B, T, d) -> (B, T, C)
        return self.dropout(self.proj(out))
