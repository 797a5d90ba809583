"""Attention that scores a sample of the keys, drawn at random (ProbSparse style), whose mask
argument is a signature kept for a common interface: its helper makes a mask of its own before
it reads one."""

import math

import torch
import torch.nn as nn


class SampledKeys(nn.Module):
    def __init__(self, mask_flag=True, factor=2):
        super().__init__()
        self.mask_flag, self.factor = mask_flag, factor

    def _context(self, scores, values, attn_mask):
        if self.mask_flag:
            length = scores.shape[-1]
            attn_mask = torch.ones(length, length, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(attn_mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ values

    def forward(self, queries, keys, values, attn_mask):
        B, L, H, E = queries.shape
        q, k, v = (t.transpose(1, 2) for t in (queries, keys, values))
        picked = torch.randint(L, (min(L, self.factor * math.ceil(math.log(L + 1))),))
        measure = (q @ k[:, :, picked].transpose(-2, -1)).amax(-1)  # which queries matter
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(E)
        context = self._context(scores, v, attn_mask)
        return (context * measure.softmax(dim=-1)[..., None]).transpose(1, 2)


class DroppedInEval(nn.Module):
    """Dropout left on in eval: still an error."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.nn.functional.dropout(self.proj(x), 0.1)
