"""A grid whose code names its axes rows, columns, batch, width (an alignment of sequences, the
batch third): its four unpacked sizes say where the batch is, so it is no image with its batch
first, whatever a guess would make of it."""

import math

import torch
import torch.nn as nn


class RowAttention(nn.Module):
    """Attention along each row's columns, the rows' scores summed (tied row attention)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        num_rows, num_cols, batch_size, embed_dim = x.size()
        shape = (num_rows, num_cols, batch_size, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(shape) / math.sqrt(self.head_dim * num_rows)  # scores summed over rows
        k, v = self.k_proj(x).view(shape), self.v_proj(x).view(shape)
        weights = torch.einsum("rinhd,rjnhd->hnij", q, k).softmax(-1)
        out = torch.einsum("hnij,rjnhd->rinhd", weights, v)
        return self.out_proj(out.reshape(num_rows, num_cols, batch_size, embed_dim))
