"""Attention 12: a tiny GPT, token ids in, next-token logits out.

Token embeddings say what each token is, position embeddings say where it is; their sum (B, T, C)
goes through ``n_layer`` blocks, a final layer norm, and the language-model head, a linear map
from C to one logit per vocabulary entry: (B, T, V). The logits at position t predict token
t + 1, which is why every block must be causal.
"""

import torch
import torch.nn as nn
from beartype import beartype
from jaxtyping import Float, Int, jaxtyped
from torch import Tensor

from reference_models.m11_block import Block


class GPT(nn.Module):
    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int,
                 dropout: float = 0.0, bias: bool = False):
        super().__init__()
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)  # token embeddings
        self.wpe = nn.Embedding(block_size, n_embd)  # position embeddings
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [Block(n_embd, n_head, block_size, dropout, bias=bias) for _ in range(n_layer)]
        )
        self.ln_f = nn.LayerNorm(n_embd, bias=bias)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    @jaxtyped(typechecker=beartype)
    def forward(self, idx: Int[Tensor, "B T"]) -> Float[Tensor, "B T V={self.vocab_size}"]:
        T = idx.size(1)
        if T > self.block_size:
            raise ValueError(f"sequence of length {T} is longer than block_size={self.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C) + (T, C)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))
