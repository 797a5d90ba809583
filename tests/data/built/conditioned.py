"""Modules whose extra inputs only the layers they are handed to explain."""

import torch
import torch.nn as nn


class TimedConvBlock(nn.Module):
    """An image block told the time through a small network per layer."""

    def __init__(self, in_channels: int, out_channels: int, time_dim: int, num_layers: int = 2):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.Sequential(nn.GroupNorm(8, in_channels if i == 0 else out_channels), nn.SiLU(),
                          nn.Conv2d(in_channels if i == 0 else out_channels, out_channels, 3, padding=1))
            for i in range(num_layers)])
        self.time_mlps = nn.ModuleList([nn.Sequential(nn.SiLU(), nn.Linear(time_dim, out_channels))
                                        for _ in range(num_layers)])

    def forward(self, x, time_vec):
        for i in range(len(self.convs)):
            x = self.convs[i](x) + self.time_mlps[i](time_vec)[:, :, None, None]
        return x


class StyledMixer(nn.Module):
    """A sequence mixer shifted by a style vector of its own width."""

    def __init__(self, d_model: int, style_width: int = 24):
        super().__init__()
        self.style = nn.Linear(style_width, d_model)
        self.mix = nn.Linear(d_model, d_model)

    def forward(self, x, s_vec):
        return self.mix(x) + self.style(s_vec)[:, None, :]


class PooledCondition(nn.Module):
    """A sequence model told a condition per sample, projected and added to every token."""

    def __init__(self, d_model: int, cond_width: int = 24):
        super().__init__()
        self.cond = nn.Sequential(nn.Dropout(0.0), nn.LayerNorm(cond_width), nn.Linear(cond_width, d_model))
        self.mix = nn.Linear(d_model, d_model)

    def forward(self, x, c_vec):
        return self.mix(x) + self.cond(c_vec)[:, None]


class ClassTable(nn.Module):
    """One embedding per class, a class dropped at random while training (a switch)."""

    def __init__(self, hidden_size: int, n_labels: int = 10, drop: float = 0.1):
        super().__init__()
        self.table = nn.Embedding(n_labels + 1, hidden_size)
        self.n_labels = n_labels
        self.drop = drop

    def forward(self, which, train):
        if train and self.drop > 0:
            which = which.masked_fill(which.new_empty(which.shape).bernoulli_(self.drop).bool(), self.n_labels)
        return self.table(which)


class PatchOut(nn.Module):
    """A last layer that sizes only its output by a patch and a channel count."""

    def __init__(self, hidden_size: int, patch_size: int, out_channels: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        self.out = nn.Linear(hidden_size, patch_size * patch_size * out_channels)

    def forward(self, x):
        return self.out(self.norm(x))


class TimeFeatures(nn.Module):
    """A timestep alone, spread over features and mixed."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.mix = nn.Linear(dim, dim)

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-torch.arange(half, dtype=torch.float32) / half)
        angles = t[:, None].float() * freqs[None]
        return self.mix(torch.cat([angles.cos(), angles.sin()], dim=-1))
