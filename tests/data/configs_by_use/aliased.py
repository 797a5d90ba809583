"""An encoder built from a hyper-parameter namespace whose field names say nothing (a suffix
names the encoder side): the constructor binds each field to a name of its own, ``n_embd`` a
width and ``self.depth`` a count the forward ranges over, and takes the length of a list of
the layers that add an auxiliary output."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, width, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        y = F.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class SuffixedEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        n_embd = hp.width_enc
        self.depth = hp.blocks_enc
        self.n_head = hp.n_head
        self.aux_at = hp.aux_layers
        self.blocks = nn.ModuleList(SelfAttention(n_embd, self.n_head) for _ in range(self.depth))
        self.norms = nn.ModuleList(nn.LayerNorm(n_embd) for _ in range(self.depth))
        if len(hp.aux_layers) != 0:
            self.aux = nn.Linear(n_embd, 3)

    def forward(self, x):
        aux = []
        for i in range(self.depth):
            x = x + self.blocks[i](self.norms[i](x))
            if i in self.aux_at:
                aux.append(self.aux(x))
        return x, aux


class RatedBlock(nn.Module):
    """One rate handed to layers whose defaults disagree (a dropout's 0.5, an attention's 0.0)."""

    def __init__(self, hp):
        super().__init__()
        self.drop = nn.Dropout(p=hp.rate)
        self.attn = nn.MultiheadAttention(hp.n_embd, hp.n_head, hp.rate, batch_first=True)

    def forward(self, x):
        return self.drop(self.attn(x, x, x, need_weights=False)[0])
