"""Attention set up in two steps, in the style of course notebooks that build a decoder one
step at a time: the keys are projected once by ``init_keys``, then each call attends with a
query. A decoder layer sets its cross-attention up through a method of its own."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class KeyedAttention(nn.Module):
    def __init__(self, hidden_dim):
        super().__init__()
        self.d_k = hidden_dim
        self.to_q = nn.Linear(hidden_dim, hidden_dim)
        self.to_k = nn.Linear(hidden_dim, hidden_dim)
        self.to_v = nn.Linear(hidden_dim, hidden_dim)

    def init_keys(self, keys):
        self.proj_keys = self.to_k(keys)
        self.proj_values = self.to_v(keys)

    def forward(self, query):
        scores = self.to_q(query) @ self.proj_keys.transpose(1, 2) / math.sqrt(self.d_k)
        return F.softmax(scores, dim=-1) @ self.proj_values


class KeyedAttentionWrongAxis(KeyedAttention):
    """The bug: the weights are normalised over the queries, not over the keys."""

    def forward(self, query):
        scores = self.to_q(query) @ self.proj_keys.transpose(1, 2) / math.sqrt(self.d_k)
        return F.softmax(scores, dim=1) @ self.proj_values


class CrossDecoderLayer(nn.Module):
    """Its cross-attention is set up by the layer's own ``init_keys(states)``."""

    def __init__(self, d_model):
        super().__init__()
        self.cross = KeyedAttention(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))
        self.norm = nn.LayerNorm(d_model)

    def init_keys(self, states):
        self.cross.init_keys(states)

    def forward(self, query):
        x = self.norm(query + self.cross(query))
        return x + self.ffn(x)


class SwitchedTable(nn.Module):
    """Set up by a call that hands it a function: no input shapetrace makes is one."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def set_table(self, fn):
        self.table = fn

    def forward(self, x):
        return self.proj(self.table(x))


class SampledWidthNorm(nn.Module):
    """A norm of a super-network: the width it normalises is chosen by a call before forward,
    which fills the weights it uses into a dict it keeps."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.samples = {}

    def set_sample_width(self, width):
        self.width = width
        self.samples["weight"] = self.weight[:width]

    def forward(self, x):
        return nn.functional.layer_norm(x[..., : self.samples["weight"].shape[0]],
                                        self.samples["weight"].shape, weight=self.samples["weight"])
