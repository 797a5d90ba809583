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


class PooledProjection(nn.Module):
    """Pools an image's sides away; its check on the input's axes is written over several lines."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(in_dim, out_dim) * in_dim**-0.5)

    def forward(self, x):
        assert (
            x.dim() == 4
        ), "expected (batch, channels, height, width), got {}".format(x.shape)
        return x.mean(dim=[-2, -1]) @ self.proj
