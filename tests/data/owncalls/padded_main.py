"""An attention called by its main block with a padding mask (most tokens kept) and a batch as
large as its head count: at the code's own sizes nothing tells the batch from the heads; re-made
at the probe sizes, the mask keeps every token and every axis is named. Its scale is written
without parentheses (``depth ** 1/2`` is half the head size)."""

import torch
from torch import nn


class PaddedAttention(nn.Module):
    def __init__(self, embed_dims, heads):
        super().__init__()
        self.heads, self.depth = heads, embed_dims // heads
        self.qkv = nn.Linear(embed_dims, 3 * embed_dims)

    def forward(self, query, key, value, mask):
        b, n, c = query.shape
        q, k, v = (t.view(b, -1, self.heads, self.depth).transpose(1, 2)
                   for t in self.qkv(query).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1)).masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores / (self.depth ** 1 / 2), dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, n, c)


if __name__ == "__main__":
    tokens = torch.randint(0, 9, (4, 10))
    mask = (tokens != 0)[:, None, None, :]
    x = torch.randn(4, 10, 32)
    print(PaddedAttention(32, 4)(x, x, x, mask).shape)
