"""A count shapetrace chose for a constructor argument that a view shows to be a number of
positions: latents made per feature token (``in_features``, a name widths also use) used as a batch of queries over the
tokens' batch axis. The failed view's element count says the count is the positions but the
first (the class token): read so, with a note, and checked."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st


class TokenLatents(nn.Module):
    """Latents of their own for each feature token attend over the samples of the batch."""

    def __init__(self, d_model, in_features, n_heads, num_latents=4):
        super().__init__()  # in_features: how many feature tokens come in, a name widths also use
        self.heads = n_heads
        self.latents = nn.Parameter(torch.randn(in_features, num_latents, d_model))
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        tokens = x[:, 1:, :].transpose(0, 1)  # (features, batch, width): the class token left out
        groups, width = self.latents.size(0), self.latents.size(-1)
        head = width // self.heads
        k, v = self.kv(tokens).view(groups, tokens.size(1), 2, self.heads, head).permute(2, 0, 3, 1, 4)
        q = self.q(self.latents).view(groups, -1, self.heads, head).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-2, -1) / head ** 0.5, dim=-1)
        return (w @ v).transpose(1, 2).reshape(groups, -1, width)


def test_a_count_a_view_shows_to_be_the_positions_is_read_as_them():
    result = st.check(TokenLatents).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    T = result.dims["T"]
    assert any(n.startswith(f"in_features={T - 1}, the positions but the first (T - 1)") for n in result.notes), \
        result.notes


class BlockSizeView(nn.Module):
    """Splits heads with the maximum length where the input's own length belongs: a bug for
    every input shorter than the block."""

    def __init__(self, d_model, n_heads, block_size):
        super().__init__()
        self.heads, self.block_size = n_heads, block_size
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (y.view(b, self.block_size, self.heads, c // self.heads).transpose(1, 2)
                   for y in self.qkv(x).chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5, dim=-1)
        return (w @ v).transpose(1, 2).reshape(b, t, c)


def test_a_maximum_length_viewed_as_the_length_is_not_read_away():
    """It is never made the positions: the run says the code only works at the full block
    (op-failed, or dim-collision where the length was made the block's)."""
    result = st.check(BlockSizeView).targets[0]
    said = {d.rule for d in result.diagnostics} & {"op-failed", "dim-collision"}
    assert said, result.diagnostics
    assert not any("block_size=" in n and "the positions" in n for n in result.notes), result.notes
