import torch
import torch.nn as nn
import torch.nn.functional as F


class GridPool(nn.Module):
    """Pools a square grid of tokens 2x2; its own check refuses a count that is no square."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        batch, tokens, width = x.shape
        side = int(tokens ** 0.5)
        if side * side != tokens:
            raise ValueError(f"{tokens} tokens are not a perfect square")
        x = self.proj(x).transpose(1, 2).reshape(batch, width, side, side)
        return F.avg_pool2d(x, 2).flatten(2).transpose(1, 2)


class RefusesOddWidth(nn.Module):
    """Takes at most four tokens, and says so in its own check."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        if x.shape[1] > 4:
            raise ValueError("at most 4 tokens, please")
        return self.proj(x)
