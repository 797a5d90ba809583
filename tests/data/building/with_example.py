"""Modules whose file shows how to call them: the example's sizes relate their arguments to the
inputs' axes."""

import torch
import torch.nn as nn


class TokenMixing(nn.Module):
    """Mixes its tokens with a learned (n, n) table: n is the sequence length, fixed by a
    default that only the example below relates to the input."""

    def __init__(self, d_model, n=49):
        super().__init__()
        self.table = nn.Parameter(torch.eye(n))
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(torch.softmax(self.table, dim=-1) @ x)


class Pooled(nn.Module):
    """Takes a reduction by name, with no default."""

    def __init__(self, d_model, how):
        super().__init__()
        self.how = how
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        pooled = x.mean(1, keepdim=True) if self.how == "mean" else x.amax(1, keepdim=True)
        return self.proj(x - pooled)


if __name__ == "__main__":
    x = torch.randn(4, 49, 64)
    mixing = TokenMixing(d_model=64, n=49)
    print(mixing(x).shape)
    print(Pooled(64, "mean")(x).shape)
