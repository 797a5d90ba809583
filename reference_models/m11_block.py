"""Attention 11: a transformer block, "communication followed by computation".

Pre-norm, as in GPT-2 and nanoGPT: ``x + attn(ln_1(x))`` lets the tokens exchange information,
then ``x + mlp(ln_2(x))`` processes each token on its own with a feed-forward network four
times wider than the model (GELU in between). The residual additions keep a clean path for the
gradient through a deep stack; the layer norms keep the inputs of each sub-layer well scaled.
"""

import torch.nn as nn
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor

from reference_models.m07_fused_qkv import FusedQKVAttention


class FeedForward(nn.Module):
    def __init__(self, n_embd: int, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        self.n_embd = n_embd
        self.fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T C={self.n_embd}"]:
        return self.dropout(self.proj(self.gelu(self.fc(x))))  # (B, T, C) -> (B, T, 4C) -> (B, T, C)


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.0,
                 causal: bool = True, bias: bool = False):
        super().__init__()
        self.n_embd = n_embd
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = FusedQKVAttention(n_embd, n_head, block_size, dropout, causal=causal, bias=bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = FeedForward(n_embd, dropout, bias=bias)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T C={self.n_embd}"]:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x
