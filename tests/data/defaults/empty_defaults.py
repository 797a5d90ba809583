"""Forward arguments whose default is an empty tensor, a stand-in for a value the caller passes
(a relative-position table, a cache of no entries), in the style of streaming speech encoders."""

import math

import torch
from torch import nn


class RelativeTableAttention(nn.Module):
    """Needs ``pos_emb`` from its caller: the empty default only fills the signature."""

    def __init__(self, n_head, n_feat):
        super().__init__()
        self.h, self.d_k = n_head, n_feat // n_head
        self.qkv = nn.Linear(n_feat, 3 * n_feat)
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        self.out = nn.Linear(n_feat, n_feat)

    def forward(self, x, pos_emb: torch.Tensor = torch.empty(0),
                cache: torch.Tensor = torch.zeros((0, 0, 0, 0))):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
        if cache.size(0) > 0:
            k_cache, v_cache = cache.chunk(2, dim=-1)
            k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
        p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1) + q @ p.transpose(-2, -1)) / math.sqrt(self.d_k)
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class CachedAttention(nn.Module):
    """An empty cache by default, handled by its own test: checked as it is."""

    def __init__(self, n_head, n_feat):
        super().__init__()
        self.h, self.d_k = n_head, n_feat // n_head
        self.qkv = nn.Linear(n_feat, 3 * n_feat)
        self.out = nn.Linear(n_feat, n_feat)

    def forward(self, x, cache: torch.Tensor = torch.zeros((0, 0, 0, 0))):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
        if cache.size(0) > 0:
            k_cache, v_cache = cache.chunk(2, dim=-1)
            k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
        y = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class CachedAttentionWrongMerge(CachedAttention):
    """The bug: the heads are merged with the wrong width, whatever the cache holds."""

    def forward(self, x, cache: torch.Tensor = torch.zeros((0, 0, 0, 0))):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
        y = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, self.d_k))
