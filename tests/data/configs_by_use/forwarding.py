"""An encoder that hands its keyword arguments to a stack of its project's own, setting one
itself and refusing it from the caller."""

import torch
import torch.nn as nn


class Layers(nn.Module):
    def __init__(self, dim, heads, depth=2, causal=False):
        super().__init__()
        self.causal = causal
        self.layers = nn.ModuleList(nn.MultiheadAttention(dim, heads, batch_first=True)
                                    for _ in range(depth))

    def forward(self, x):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if self.causal else None
        for attn in self.layers:
            x = x + attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        return x


class Encoder(Layers):
    def __init__(self, **kwargs):
        assert "causal" not in kwargs, "cannot set causality on an encoder"
        super().__init__(causal=False, **kwargs)
