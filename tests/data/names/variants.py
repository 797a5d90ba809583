"""One student multi-head attention with a switch per bug, for runs at the student's sizes.

``scale``: "d" (right), "C", "H", "none"; ``split``/``merge``: "right" or "jumble" (a reshape
straight to or from the head layout, without the transpose).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


class AnonymousMHA(nn.Module):
    """No attribute states a size: only dims=, annotations or declared inputs name anything."""

    def __init__(self, width, heads, scale="d", split="right", merge="right"):
        super().__init__()
        self.heads = heads
        self.scale, self.split, self.merge = scale, split, merge
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        H = self.heads
        hs = C // H
        q, k, v = self.qkv(x).split(C, dim=-1)
        if self.split == "right":
            q, k, v = (t.view(B, T, H, hs).transpose(1, 2) for t in (q, k, v))
        else:
            q, k, v = (t.reshape(B, H, T, hs) for t in (q, k, v))  # BUG: reshape-jumble
        att = q @ k.transpose(-2, -1)
        if self.scale == "d":
            att = att / math.sqrt(hs)
        elif self.scale == "C":
            att = att / math.sqrt(C)  # BUG: attention-scale
        elif self.scale == "H":
            att = att / math.sqrt(H)  # BUG: attention-scale
        att = F.softmax(att, dim=-1)
        y = att @ v
        if self.merge == "right":
            y = y.transpose(1, 2).contiguous().view(B, T, C)
        else:
            y = y.reshape(B, T, C)  # BUG: reshape-jumble
        return self.proj(y)


class ProvenMHA(AnonymousMHA):
    """nanoGPT's attributes: n_embd and n_head state C and H (and so d = C / H)."""

    def __init__(self, n_embd, n_head, **bugs):
        super().__init__(n_embd, n_head, **bugs)
        self.n_embd, self.n_head = n_embd, n_head


class AnnotatedMHA(AnonymousMHA):
    """The sizes stated the jaxtyping way, on forward: batch, seq and C."""

    def forward(self, x: Float[Tensor, "batch seq C"]) -> Float[Tensor, "batch seq C"]:
        return super().forward(x)
