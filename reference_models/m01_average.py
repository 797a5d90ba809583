"""Attention 1: every token is the average of itself and the tokens before it.

Three ways to compute the same thing (Karpathy's "mathematical trick in self-attention"):
a loop, a matmul with a normalised lower-triangular matrix, and a softmax over a mask of
``-inf``. The third one is the shape attention keeps: replace the zeros with learned scores and
the average becomes a weighted average. No weights, so any width C works.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor


class AverageLoop(nn.Module):
    """Method 1: for each position t, the mean of x[:, :t+1] (a loop over time)."""

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.size(1)
        means = [x[:, : t + 1].mean(dim=1) for t in range(T)]  # T tensors of (B, C)
        return torch.stack(means, dim=1)


class AverageMatmul(nn.Module):
    """Method 2: a lower-triangular (T, T) matrix whose rows sum to 1, times x."""

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.size(1)
        wei = torch.tril(torch.ones(T, T, dtype=x.dtype, device=x.device))
        wei = wei / wei.sum(dim=1, keepdim=True)
        return wei @ x  # (T, T) @ (B, T, C): the (T, T) matrix is shared by the batch


class AverageSoftmax(nn.Module):
    """Method 3: zeros, the future filled with -inf, softmax over each row, times x."""

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.size(1)
        tril = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        wei = torch.zeros(T, T, dtype=x.dtype, device=x.device)
        wei = wei.masked_fill(~tril, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ x
