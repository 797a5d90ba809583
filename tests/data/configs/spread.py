"""Configs handed on as keyword arguments: a vocoder-style model whose decoder is built from a
dict its caller passes (``Decoder(**decoder_config)``)."""

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

