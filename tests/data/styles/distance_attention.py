"""Attention by the distance between queries and keys (``torch.cdist``, as L2 self-attention
for a better Lipschitz constant computes it), with its minus sign and without. The correct ones
are quiet; each buggy twin takes the softmax of the distance itself, so the farthest key gets
the most weight, and is found by attention-textbook at the line of the distance (``# BUG``)."""

import torch
import torch.nn as nn
from einops import rearrange


class _L2Heads(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def split(self, x):
        return [rearrange(t, "b n (h d) -> (b h) n d", h=self.heads) for t in self.to_qkv(x).chunk(3, dim=-1)]

    def merge(self, out, batch):
        return self.to_out(rearrange(out, "(b h) n d -> b n (h d)", b=batch))


class NearestFirst(_L2Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        attn = (-torch.cdist(q, k, p=2) * self.scale).softmax(dim=-1)
        return self.merge(attn @ v, x.shape[0])


class NearestFirstNegatedAfter(_L2Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        dist = torch.cdist(q, k) * self.scale
        return self.merge((-dist).softmax(dim=-1) @ v, x.shape[0])


class FarthestFirst(_L2Heads):
    BUG = "attention-textbook"

    def forward(self, x):
        q, k, v = self.split(x)
        sim = torch.cdist(q, k, p=2)  # BUG
        return self.merge(sim.softmax(dim=-1) @ v, x.shape[0])


class FarthestFirstScaled(_L2Heads):
    BUG = "attention-textbook"

    def forward(self, x):
        q, k, v = self.split(x)
        sim = torch.cdist(q, k) * self.scale  # BUG
        return self.merge(sim.softmax(dim=-1) @ v, x.shape[0])


class SoftAssignmentsByDistance(nn.Module):
    """A softmax over the distances to prototypes that no value is weighted by (the assignments
    are returned): no attention, nothing to say."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, prototypes=5):
        super().__init__()
        self.prototypes = nn.Parameter(torch.randn(prototypes, dim))

    def forward(self, x):
        return torch.cdist(x, self.prototypes.expand(x.shape[0], -1, -1)).softmax(dim=-1)
