"""Configs handed on as keyword arguments: a vocoder-style model whose decoder is built from a
dict its caller passes (``Decoder(**decoder_config)``)."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


class ConvDecoder(nn.Module):
    def __init__(self, idim, odim, hidden, n_layers=2):
        super().__init__()
        self.inp = nn.Conv1d(idim, hidden, 3, padding=1)
        self.blocks = nn.ModuleList([nn.Conv1d(hidden, hidden, 3, padding=1) for _ in range(n_layers)])
        self.out = nn.Conv1d(hidden, odim, 1)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + F.gelu(block(h))
        return self.out(h)


class SpreadConfigModel(nn.Module):
    def __init__(self, decoder_config: dict, encoder_config=None):
        super().__init__()
        self.decoder = ConvDecoder(**decoder_config)
        self.encoder = ConvDecoder(**encoder_config) if encoder_config is not None else None

    def forward(self, x):
        return self.decoder(x if self.encoder is None else self.encoder(x))



@dataclass
class BlockArgs:
    """Fields annotated in the class body, set from keyword arguments its own constructor takes
    (the dataclass keeps it, and makes none)."""

    dim: int = 4096
    n_heads: int = 32
    norm_eps: float = 1e-5

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if hasattr(self, key):
                setattr(self, key, value)
        assert self.dim % self.n_heads == 0


class ArgsAttention(nn.Module):
    def __init__(self, args: BlockArgs):
        super().__init__()
        self.n_heads, self.head_dim = args.n_heads, args.dim // args.n_heads
        self.qkv = nn.Linear(args.dim, 3 * args.dim)
        self.out = nn.Linear(args.dim, args.dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))
