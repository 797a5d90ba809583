"""Weights over an image's positions: efficient (linear) attention whose keys are normalised
over every position before the context is taken, the same with the positions kept apart in the
einsum, axial attention along one side, and an attention pooling whose heads are summed. Each
normalises over what it contracts with the values (or sums heads, a choice of the model) and is
quiet. The buggy twin normalises the keys along one side of the image and contracts them over
both: the context's weights sum to the number of rows."""

import torch
import torch.nn as nn
from einops import rearrange


class EfficientOverPositions(nn.Module):
    """Keys softmaxed over the flattened positions, queries over their features."""

    INIT = {"dim": "C", "heads": "H", "dim_key": "d"}
    INPUTS = ["img=B,C,Y,Z"]
    DIMS = {"Y": 29, "Z": 31}

    def __init__(self, dim, heads, dim_key):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Conv2d(dim, 3 * heads * dim_key, 1, bias=False)
        self.to_out = nn.Conv2d(heads * dim_key, dim, 1)

    def forward(self, img):
        b, _, rows, cols = img.shape
        q, k, v = self.to_qkv(img).chunk(3, dim=1)
        q, k, v = (rearrange(t, "b (h c) x y -> b h c (x y)", h=self.heads) for t in (q, k, v))
        k = k.softmax(dim=-1)
        q = q.softmax(dim=-2)
        context = torch.einsum("bhdn,bhen->bhde", k, v)
        out = torch.einsum("bhde,bhdn->bhen", context, q)
        return self.to_out(rearrange(out, "b h c (x y) -> b (h c) x y", x=rows, y=cols))


class EfficientPositionsApart(EfficientOverPositions):
    """The keys normalised over the flattened positions, contracted with x and y kept apart."""

    def forward(self, img):
        q, k, v = self.to_qkv(img).chunk(3, dim=1)
        q, k, v = (rearrange(t, "b (h c) x y -> (b h) c x y", h=self.heads) for t in (q, k, v))
        k = k.flatten(-2).softmax(dim=-1).view_as(k)
        context = torch.einsum("ndxy,nexy->nde", k, v)
        out = torch.einsum("nde,ndxy->nexy", context, q.softmax(dim=1))
        return self.to_out(rearrange(out, "(b h) c x y -> b (h c) x y", h=self.heads))


class EfficientOneSide(EfficientOverPositions):
    BUG = "softmax-axis"

    def forward(self, img):
        q, k, v = self.to_qkv(img).chunk(3, dim=1)
        q, k, v = (rearrange(t, "b (h c) x y -> (b h) c x y", h=self.heads) for t in (q, k, v))
        k = k.softmax(dim=-1)  # BUG
        context = torch.einsum("ndxy,nexy->nde", k, v)
        out = torch.einsum("nde,ndxy->nexy", context, q.softmax(dim=1))
        return self.to_out(rearrange(out, "(b h) c x y -> b (h c) x y", h=self.heads))


class AxialAlongColumns(nn.Module):
    """Each row attends along its own columns: the softmax over y, the contraction over y."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,Y,Z,C"]
    DIMS = {"Y": 29, "Z": 31}

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.scale = dim ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.einsum("bxid,bxjd->bxij", q, k) * self.scale
        return torch.einsum("bxij,bxjd->bxid", scores.softmax(dim=-1), v)


class PoolingHeadsSummed(nn.Module):
    """One query per head pools the sequence; the heads' summaries are summed."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(heads, dim) * dim ** -0.5)
        self.keys = nn.Linear(dim, dim, bias=False)
        self.scale = dim ** -0.5

    def forward(self, x):
        scores = torch.einsum("hd,btd->bht", self.queries, self.keys(x)) * self.scale
        return torch.einsum("bht,btd->bd", scores.softmax(dim=-1), x)
