"""A patch encoder that lifts flattened patches into a latent width no input has, then attends
with heads of that latent width; the scores are divided by the square root of the whole latent
width, not of one head's (HeadScaledAttention's, by one head's width, is right). Its own call
passes the latent width and the head count as numbers."""

import math

import torch
from torch import nn


class LatentAttention(nn.Module):
    def __init__(self, latent, heads):
        super().__init__()
        self.heads, self.latent = heads, latent
        self.q = nn.Linear(latent, latent)
        self.k = nn.Linear(latent, latent)
        self.v = nn.Linear(latent, latent)
        self.root = math.sqrt(latent)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (f(x).view(b, n, self.heads, -1).transpose(1, 2) for f in (self.q, self.k, self.v))
        weights = torch.softmax(q @ k.transpose(-2, -1) / self.root, dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, n, self.latent)


class HeadScaledAttention(LatentAttention):
    """The same attention scaled by one head's width: right."""

    def __init__(self, latent, heads):
        super().__init__(latent, heads)
        self.root = math.sqrt(latent // heads)


class PatchEncoder(nn.Module):
    def __init__(self, patch_features, patches, latent, heads, depth, block=LatentAttention):
        super().__init__()
        self.lift = nn.Linear(patch_features, latent)
        self.start = nn.Parameter(torch.zeros(1, 1, latent))
        self.where = nn.Parameter(torch.zeros(1, patches + 1, latent))
        self.blocks = nn.ModuleList(block(latent, heads) for _ in range(depth))
        self.out = nn.Linear(latent, 3)

    def forward(self, x):
        x = self.lift(x)
        x = torch.cat([self.start.expand(x.shape[0], -1, -1), x], dim=1) + self.where
        for block in self.blocks:
            x = x + block(x)
        return self.out(x[:, 0])


if __name__ == "__main__":
    encoder = PatchEncoder(patch_features=27, patches=16, latent=96, heads=8, depth=2)
    print(encoder(torch.randn(4, 16, 27)).shape)
    right = HeadScaledAttention(96, 8)
    print(right(torch.randn(4, 17, 96)).shape)
