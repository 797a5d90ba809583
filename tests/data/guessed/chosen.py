"""Modules built from values nothing sets, whose own sizes decide what fits."""

import torch
import torch.nn as nn


class DistancePriorAttention(nn.Module):
    """A prior over the distances of a window, filled position by position: the window is as
    long as the sequence, which nothing in its name says."""

    def __init__(self, win_size, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.distances = torch.zeros(win_size, win_size)
        for i in range(win_size):
            for j in range(win_size):
                self.distances[i][j] = abs(i - j)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / (C // self.n_heads) ** 0.5
        scores = scores - self.distances.to(x.device)  # (T, T): the window is the sequence
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class PriorOnDevice(DistancePriorAttention):
    """The same, moved to the GPU on its own lines (left on the CPU where there is none)."""

    def __init__(self, win_size, d_model, n_heads):
        super().__init__(win_size, d_model, n_heads)
        self.distances = self.distances.cuda()

    def forward(self, x):
        self.distances = self.distances.cuda()
        return super().forward(x)


class StackedBlocks(nn.Module):
    """A count of layers, each built in the loop: still a count."""

    def __init__(self, d_model, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class ChunkedMaskedAttention(nn.Module):
    """Attention within chunks of the sequence; an optional mask over (B, 1, T, T) multiplied
    into the scores, cut chunk by chunk."""

    def __init__(self, d_model, kernel_size):
        super().__init__()
        self.chunk = kernel_size
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        n = T // self.chunk
        q, k, v = (t[:, :n * self.chunk].reshape(B, n, self.chunk, C) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / C ** 0.5
        if mask is not None:
            masks = []
            for i in range(n):
                masks.append(mask[:, :, i * self.chunk:(i + 1) * self.chunk,
                                  i * self.chunk:(i + 1) * self.chunk])
            mask = torch.stack(masks, dim=1)
            scores = scores.float() - mask.float() * 1e9
        return (scores.softmax(-1) @ v).reshape(B, n * self.chunk, C)


class PriorOverPaddedScores(DistancePriorAttention):
    """The window is the sequence and two more (tokens the scores are padded with):
    no probe size is that long, so the value cannot be read as one."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        scores = torch.nn.functional.pad(q @ k.transpose(-2, -1), (0, 2, 0, 2))
        scores = scores - self.distances
        return self.out((scores[..., :T, :T].softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class WindowPrior(nn.Module):
    """Distances over a window, subtracted from the scores it is handed."""

    def __init__(self, win_size):
        super().__init__()
        self.distances = torch.zeros(win_size, win_size)
        for i in range(win_size):
            for j in range(win_size):
                self.distances[i][j] = abs(i - j)

    def forward(self, scores):
        return scores - self.distances


class PriorLayer(nn.Module):
    """An attention layer handed the prior it applies, built by the project's own code."""

    def __init__(self, prior, d_model, n_heads):
        super().__init__()
        self.prior, self.n_heads = prior, n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        scores = self.prior(q @ k.transpose(-2, -1) * (C // self.n_heads) ** -0.5)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


def build_layer(window, d_model, n_heads):
    return PriorLayer(WindowPrior(window), d_model, n_heads)
