"""Attention 4: causal attention with the mask in a registered buffer.

The triangular mask is built once, for the longest sequence the model accepts (``block_size``),
and registered as a buffer: it follows the module to the GPU and is not a parameter. Each call
slices it to the current length T. Dropout on the attention weights randomly silences some
connections while training and does nothing in eval mode.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor


class CausalAttention(nn.Module):
    def __init__(self, n_embd: int, head_size: int, block_size: int, dropout: float = 0.0,
                 bias: bool = False):
        super().__init__()
        self.n_embd = n_embd
        self.head_size = head_size
        self.query = nn.Linear(n_embd, head_size, bias=bias)
        self.key = nn.Linear(n_embd, head_size, bias=bias)
        self.value = nn.Linear(n_embd, head_size, bias=bias)
        self.dropout = nn.Dropout(dropout)
        tril = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("tril", tril, persistent=False)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T d={self.head_size}"]:
        T = x.size(1)
        q, k, v = self.query(x), self.key(x), self.value(x)  # each (B, T, d)
        scores = q @ k.transpose(-2, -1) * self.head_size**-0.5  # (B, T, T)
        scores = scores.masked_fill(~self.tril[:T, :T], float("-inf"))
        weights = self.dropout(F.softmax(scores, dim=-1))
        return weights @ v
