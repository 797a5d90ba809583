"""Attention 10: multi-head attention on ``F.scaled_dot_product_attention``.

PyTorch's fused kernel computes ``softmax(q k^T / sqrt(d) + mask) v`` in one call, with the
causal mask (``is_causal=True``) and the dropout built in, and picks a flash or memory-efficient
implementation when the hardware allows. The projections and the head split stay ours. The
functional dropout must be switched off in eval mode by hand: ``self.training`` does it.
"""

import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor

from reference_models.m06_multi_head import merge_heads, split_heads


class SDPAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.0, causal: bool = True,
                 bias: bool = False):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd={n_embd} is not divisible by n_head={n_head}")
        self.n_embd = n_embd
        self.n_head = n_head
        self.causal = causal
        self.dropout = dropout
        self.query = nn.Linear(n_embd, n_embd, bias=bias)
        self.key = nn.Linear(n_embd, n_embd, bias=bias)
        self.value = nn.Linear(n_embd, n_embd, bias=bias)
        self.proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C={self.n_embd}"]) -> Float[Tensor, "B T C={self.n_embd}"]:
        q = split_heads(self.query(x), self.n_head)  # (B, H, T, d)
        k = split_heads(self.key(x), self.n_head)
        v = split_heads(self.value(x), self.n_head)
        out = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
        )
        return self.resid_dropout(self.proj(merge_heads(out)))
