"""A next-item recommender in the style recommendation code writes: item ids looked up in a table
sized by a count of items, positions as a learned table of max_len rows cut to the sequence, torch's
encoder layer fed sequence-first with a causal mask the constructor builds and keeps as a plain
attribute (moved to a device named by a default), and a key padding mask handed on."""

import torch
import torch.nn as nn


class NextItemEncoder(nn.Module):
    def __init__(self, n_items, max_len, embed_size=48, dropout=0.1, device="cuda:0"):
        super().__init__()
        self.item_embed = nn.Embedding(n_items, embed_size)
        self.pos_embed = nn.Parameter(torch.randn(max_len, embed_size))
        self.future = torch.triu(torch.ones(max_len, max_len), diagonal=1).bool().to(device)
        self.layer = nn.TransformerEncoderLayer(d_model=embed_size, nhead=1,
                                                dim_feedforward=embed_size, dropout=dropout)

    def forward(self, sequence, padding_mask):
        T = sequence.shape[1]
        e = (self.item_embed(sequence) + self.pos_embed[:T]).permute(1, 0, 2)
        return self.layer(e, self.future[:T, :T], padding_mask).permute(1, 0, 2)


class NextItemEncoderPastMasked(NextItemEncoder):
    """The mask built the other way round: it blocks the past and lets every item see the
    items after it."""

    def __init__(self, n_items, max_len, embed_size=48, dropout=0.1, device="cuda:0"):
        super().__init__(n_items, max_len, embed_size, dropout, device)
        self.future = (torch.triu(torch.ones(max_len, max_len)) == 0).to(device)  # BUG


class VerticalConvolution(nn.Module):
    """Item embeddings stacked as an image, one convolution as tall as the whole sequence:
    the input must be exactly max_len long."""

    def __init__(self, n_items, max_len, dims=32, n_filters=4):
        super().__init__()
        self.items = nn.Embedding(n_items, dims)
        self.conv = nn.Conv2d(1, n_filters, (max_len, 1))
        self.out = nn.Linear(n_filters * dims, dims)

    def forward(self, seq):
        image = self.items(seq).unsqueeze(1)  # (B, 1, T, dims)
        return self.out(self.conv(image).flatten(1))


class SevenStepCausal(nn.Module):
    """A causal mask for seven steps built in the constructor and kept as a plain attribute,
    handed to torch's attention whole: only its values say the module is causal."""

    def __init__(self, dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, 1, batch_first=True)
        self.blocked = torch.triu(torch.ones(7, 7), diagonal=1).bool()

    def forward(self, x):
        return self.attn(x, x, x, attn_mask=self.blocked, need_weights=False)[0]


class SevenStepPastBlocked(SevenStepCausal):
    def __init__(self, dim):
        super().__init__(dim)
        self.blocked = torch.tril(torch.ones(7, 7), diagonal=-1).bool()  # BUG
