"""A TorchScript helper compiled against a function that the file defines again further down:
the compiled graph keeps the first definition, its Python would call the second. Traced as
Python it would compute something the module never computes, so it stays compiled."""

import torch
import torch.nn as nn


def shift_and_scale(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale) + shift


@torch.jit.script
def shift_and_scale_fused(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return shift_and_scale(x, shift, scale)


def shift_and_scale(x, shift, scale):  # noqa: F811 - for conditions of one vector per sample
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class ConditionedOutput(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.norm = nn.LayerNorm(n_embd, elementwise_affine=False)
        self.modulation = nn.Linear(n_embd, 2 * n_embd)
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x, c):
        shift, scale = self.modulation(c)[:, None].chunk(2, dim=2)
        return self.out(shift_and_scale_fused(self.norm(x), shift, scale))
