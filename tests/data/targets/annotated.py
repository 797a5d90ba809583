"""Modules whose forward carries jaxtyping annotations."""

from __future__ import annotations

from typing import Optional

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn


class Embed(nn.Module):
    def __init__(self, vocab_size, n_embd):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)

    def forward(self, idx: Int[Tensor, "B T"]) -> Float[Tensor, "B T C"]:
        return self.wte(idx)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(
        self,
        x: Float[Tensor, "batch seq C"],
        context: Float[Tensor, "B S C"],
        mask: Optional[Bool[Tensor, "T S"]] = None,
    ) -> Float[Tensor, "B T C"]:
        return self.attn(x, context, context, attn_mask=mask)[0]


class Masked(nn.Module):
    def forward(self, x: Float[Tensor, "*batch T C"], mask: Bool[Tensor, "T T"]):
        return x.masked_fill(~mask[..., None], 0.0)


class Fused(nn.Module):
    def forward(self, qkv: Float[Tensor, "B T 3*C"], bias: Float[Tensor, "1 T"]):
        return qkv


class Untyped(nn.Module):
    def forward(self, x: Float[Tensor, "B T Q"]):
        return x


class Defaults(nn.Module):
    def forward(self, x: Float[Tensor, "B T C"], scale: float = 1.0, y: Optional[Float[Tensor, "B T C"]] = None):
        return x * scale


def plain_forward(x: torch.Tensor, memory: torch.Tensor):
    return x
