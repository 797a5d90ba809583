"""Embeddings of one value per sample whose input's name says nothing: the first use in forward
gives each sample's value a new axis."""

import math

import torch
import torch.nn as nn


class NoiseLevelEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        half = dim // 2
        self.register_buffer("freqs", torch.exp(-math.log(10000) * torch.arange(half) / half))
        self.proj = nn.Linear(2 * half, dim)

    def forward(self, noise_level):
        angles = noise_level.unsqueeze(1) * self.freqs.unsqueeze(0)
        return self.proj(torch.cat((angles.sin(), angles.cos()), dim=-1))


class StepIndexed(NoiseLevelEmbedding):
    def forward(self, step):
        angles = step[:, None].float() * self.freqs[None]
        return self.proj(torch.cat((angles.sin(), angles.cos()), dim=-1))


class StepViewed(NoiseLevelEmbedding):
    def forward(self, step):
        angles = step.view(step.size(0), 1) * self.freqs
        return self.proj(torch.cat((angles.sin(), angles.cos()), dim=-1))
