"""A forecaster built from a config object whose field names say nothing of what they are:
``enc_in`` and ``pred_len`` size linear layers, ``e_layers`` counts layers, ``activation`` and ``factor``
keep the defaults of the parameters they are handed to. Its forward takes decoder inputs it
hands to a helper that never reads them."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FullAttention(nn.Module):
    def __init__(self, mask_flag=True, factor=5, attention_dropout=0.1):
        super().__init__()
        self.mask_flag = mask_flag
        self.factor = factor
        self.dropout = nn.Dropout(attention_dropout)

    def forward(self, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = torch.einsum("blhe,bshe->bhls", q, k) * scale
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return torch.einsum("bhls,bshd->blhd", weights, v)


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads):
        super().__init__()
        self.inner = attention
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, L, _ = x.shape
        H = self.n_heads
        q = self.q(x).view(B, L, H, -1)
        k = self.k(x).view(B, L, H, -1)
        v = self.v(x).view(B, L, H, -1)
        return self.out(self.inner(q, k, v).reshape(B, L, -1))


class EncoderLayer(nn.Module):
    def __init__(self, attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = attention
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x):
        x = self.norm1(x + self.dropout(self.attention(x)))
        return self.norm2(x + self.fc2(self.activation(self.fc1(x))))


class Forecaster(nn.Module):
    """Steps of ``enc_in`` variates embedded as tokens, each projected to ``pred_len`` values."""

    def __init__(self, configs):
        super().__init__()
        self.pred_len = configs.pred_len
        self.embed = nn.Linear(configs.enc_in, configs.d_model)
        self.layers = nn.ModuleList([
            EncoderLayer(AttentionLayer(FullAttention(False, configs.factor,
                                                      attention_dropout=configs.dropout),
                                        configs.d_model, configs.n_heads),
                         configs.d_model, configs.d_ff, dropout=configs.dropout,
                         activation=configs.activation)
            for _ in range(configs.e_layers)])
        self.projector = nn.Linear(configs.d_model, configs.pred_len)

    def forecast(self, x, x_dec, x_mark_dec):
        tokens = self.embed(x)
        for layer in self.layers:
            tokens = layer(tokens)
        return self.projector(tokens)

    def forward(self, x, x_dec, x_mark_dec):
        return self.forecast(x, x_dec, x_mark_dec)


class ClassEmbedder(nn.Module):
    """Class labels into vectors, with one more row for the unconditional class that guidance
    drops labels to."""

    def __init__(self, num_classes, hidden_size, dropout_prob):
        super().__init__()
        use_null = int(dropout_prob > 0)
        self.table = nn.Embedding(num_classes + use_null, hidden_size)
        self.num_classes = num_classes

    def forward(self, labels):
        return self.table(labels)


class ModulatedBlock(nn.Module):
    """Its modulation on or off by an argument the class only ever tests."""

    def __init__(self, dim, adaLN):
        super().__init__()
        self.adaLN = adaLN
        self.norm = nn.LayerNorm(dim)
        if self.adaLN:
            self.modulation = nn.Linear(dim, 2 * dim)

    def forward(self, x, c):
        h = self.norm(x)
        if self.adaLN:
            shift, scale = self.modulation(c).chunk(2, dim=-1)
            h = h * (1 + scale) + shift
        return x + h
