"""A constructor argument that no parameter-name rule can fill."""

import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self, n_embd, temperature):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.temperature = temperature

    def forward(self, x):
        return self.proj(x) / self.temperature


class Fragile(nn.Module):
    """Builds only when the width divides by 4."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        if n_embd % 4:
            raise ValueError(f"n_embd={n_embd} must be a multiple of 4")
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.proj(x)
