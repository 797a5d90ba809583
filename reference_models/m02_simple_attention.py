"""Attention 2: self-attention without weights.

Each output is a weighted sum of the inputs, ``a_i = sum_j alpha_ij x_j``, where the weights
are a softmax over the dot products ``x_i . x_j`` (Jurafsky & Martin's "simplified version",
Raschka's first ``SelfAttention``). With ``causal=True`` only ``j <= i`` takes part. There is no
scaling yet: it arrives with the query and key projections in ``m03_head`` (shapetrace's
attention-scale rule notes the missing scale as a warning, which is expected here).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor


class SimpleSelfAttention(nn.Module):
    def __init__(self, causal: bool = False):
        super().__init__()
        self.causal = causal

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.size(1)
        scores = x @ x.transpose(-2, -1)  # (B, T, T): x_i . x_j
        if self.causal:
            tril = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~tril, float("-inf"))
        weights = F.softmax(scores, dim=-1)  # each row sums to 1 over j
        return weights @ x
