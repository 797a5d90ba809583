"""A norm over the channels of (B, C, T) with a scale and a shift of shape (1, C, 1)."""

import torch
from torch import nn


class ChannelNorm(nn.Module):
    def __init__(self, channels, eps=1e-4):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        var = ((x - mean) ** 2).mean(1, keepdim=True)
        x = (x - mean) * torch.rsqrt(var + self.eps)
        return x * self.gamma.view(1, -1, 1) + self.beta.view(1, -1, 1)



class StyleNorm(nn.Module):
    """Adaptive instance norm: a style vector per sample scales and shifts channels-first data."""

    def __init__(self, style_dim, num_features):
        super().__init__()
        self.norm = nn.InstanceNorm1d(num_features, affine=True)
        self.fc = nn.Linear(style_dim, num_features * 2)

    def forward(self, x, s):
        h = self.fc(s)
        gamma, beta = h.view(h.size(0), h.size(1), 1).chunk(2, dim=1)
        return (1 + gamma) * self.norm(x) + beta
