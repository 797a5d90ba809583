"""Modules built from a config whose parts the code names before reading them
(``enc = config.encoder_config``), written for these tests."""

import math

import torch
import torch.nn as nn


class EncoderAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        enc = config.encoder_config
        self.n_head = enc.num_attention_heads
        self.head_dim = enc.hidden_size // enc.num_attention_heads
        self.qkv = nn.Linear(enc.hidden_size, 3 * enc.hidden_size)
        self.out = nn.Linear(enc.hidden_size, enc.hidden_size)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)).softmax(dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(B, T, C))


class EncoderAttentionScaledByWidth(EncoderAttention):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(C)).softmax(dim=-1)  # BUG: attention-scale
        return self.out((weights @ v).transpose(1, 2).reshape(B, T, C))


class Encoder(nn.Module):
    def __init__(self, config, compute_dtype: torch.dtype):
        super().__init__()
        enc = config.encoder_config
        self.layers = nn.ModuleList(EncoderAttention(config) for _ in range(enc.num_hidden_layers))
        self.norm = nn.LayerNorm(enc.hidden_size, eps=enc.norm_eps, dtype=compute_dtype)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.norm(x)
