"""A width the module's own code fixes (a config whose width stays at its default, 256) is read
where a layer meets the guessed input after a norm over its last axis too (``self.attn(
F.rms_norm(x, (x.size(-1),)))``): the norm keeps the input's width, so the layer's 256 is the
width to feed, not a bug of the module (an op-failed from the guess)."""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st


@dataclass
class FixedConfig:
    n_head: int = 4
    n_embd: int = 256  # fixed: nothing scales it


class NormedAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        n, t, c = x.shape
        q, k, v = (z.view(n, t, self.n_head, -1).transpose(1, 2)
                   for z in self.qkv(x).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(n, t, c))


class NormedBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = NormedAttention(config)

    def forward(self, x):
        return x + self.attn(F.rms_norm(x, (x.size(-1),)))


def test_a_width_fixed_behind_a_norm_is_the_width_fed():
    result = st.check(NormedBlock, init={"config": FixedConfig()}).targets[0]
    assert result.error is None, result.error
    assert result.dims["C"] == 256
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
