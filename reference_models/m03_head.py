"""Attention 3: one head with learned query, key and value projections.

``q = x W_q``, ``k = x W_k``, ``v = x W_v`` map the width C to the head size d. Scores are
``q . k`` scaled by ``1/sqrt(d)`` so that their variance does not grow with d (a peaky softmax
learns slowly). ``causal=True`` hides the future with a triangular mask built for each call;
``m04_causal_attention`` keeps the mask in a buffer instead.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Bool, Float, jaxtyped
from torch import Tensor


@jaxtyped(typechecker=beartype)
def causal_mask(T: int, device: torch.device | None = None) -> Bool[Tensor, "T T"]:
    """True where a query (row) may look at a key (column): at itself and earlier tokens."""
    return torch.tril(torch.ones(T, T, dtype=torch.bool, device=device))


class Head(nn.Module):
    def __init__(self, n_embd: int, head_size: int, causal: bool = True, bias: bool = False,
                 dropout: float = 0.0):
        super().__init__()
        self.n_embd = n_embd
        self.head_size = head_size
        self.causal = causal
        self.query = nn.Linear(n_embd, head_size, bias=bias)
        self.key = nn.Linear(n_embd, head_size, bias=bias)
        self.value = nn.Linear(n_embd, head_size, bias=bias)
        self.dropout = nn.Dropout(dropout)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T d={self.head_size}"]:
        T = x.size(1)
        q = self.query(x)  # (B, T, d)
        k = self.key(x)
        v = self.value(x)
        scores = q @ k.transpose(-2, -1) * self.head_size**-0.5  # (B, T, T)
        if self.causal:
            scores = scores.masked_fill(~causal_mask(T, x.device), float("-inf"))
        weights = self.dropout(F.softmax(scores, dim=-1))
        return weights @ v
