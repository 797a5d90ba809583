"""The model that builds the layers of layers.py and makes their masks from its token ids."""

import torch.nn as nn

from .layers import MaskedLayer


class PaddedEncoder(nn.Module):
    def __init__(self, vocab_size, d_model, n_head, n_layers=2, pad_idx=0):
        super().__init__()
        self.pad_idx = pad_idx
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_idx)
        self.layers = nn.ModuleList(MaskedLayer(d_model, n_head, i) for i in range(n_layers))

    def forward(self, tokens):
        pad_mask = (tokens != self.pad_idx)[:, None, None, :]
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, pad_mask)
        return x
