"""A course's module that collects the layers its chapters (notebooks) build: nothing in this
file says what a stack is built from or how wide the recurrent encoder's input is; the chapter
beside it does."""

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, n_heads, d_model):
        super().__init__()
        self.n_heads, self.d_model = n_heads, d_model
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.n_heads, c // self.n_heads).permute(2, 0, 3, 1, 4)
        w = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(c // self.n_heads), dim=-1)
        return x + self.proj((w @ v).transpose(1, 2).reshape(b, t, c))


class StackEncoder(nn.Module):
    """Copies of one layer handed in."""

    def __init__(self, encoder_layer, n_layers=1):
        super().__init__()
        self.d_model = encoder_layer.d_model
        self.layers = nn.ModuleList([copy.deepcopy(encoder_layer) for _ in range(n_layers)])

    def forward(self, X):
        for layer in self.layers:
            X = layer(X)
        return X


class RnnEncoder(nn.Module):
    """Its input width is a number of features the chapter passes (2-D points)."""

    def __init__(self, n_features, hidden_dim):
        super().__init__()
        self.rnn = nn.GRU(n_features, hidden_dim, batch_first=True)

    def forward(self, X):
        out, _ = self.rnn(X)
        return out
