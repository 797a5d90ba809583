"""What makes a matrix attention weights: non-negative, normalised over one axis, contracted
along it with values that do not come from the weights themselves. Nyström-style landmark
attention (a Newton-Schulz pseudo-inverse iterated on softmax weights), linear attention with
kernel feature maps (elu + 1, softmaxed q and k, Performer-like random features), and scales
applied in place (``q *= self.scale``, ``q.mul_(...)``, ``s /= ...``), sequence-first, a
relative-position table and ALiBi added to one set of scores, a learned bias per key, all
quiet; k scaled in place, q scaled in place on a view of a fused projection (einops and einsum),
the scores scaled and masked in place, a grouped-query view scaled in place, all quiet; buggy
twins: weights scaled after the softmax, q scaled in place and the scores again, q scaled in
place by the width, a relative-position bias added twice, a key bias broadcast over the queries
(the softmax removes it), each marked ``# BUG``."""

import math

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


class _Fused(nn.Module):
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.width, self.head_size = heads, width, width // heads
        self.scale = self.head_size ** -0.5
        self.to_qkv = nn.Linear(width, 3 * width, bias=False)
        self.to_out = nn.Linear(width, width)

    def qkv(self, x):
        batch, length, _ = x.shape
        packed = self.to_qkv(x).view(batch, length, 3, self.heads, self.head_size)
        return packed.permute(2, 0, 3, 1, 4).unbind(0)

    def merge(self, y):
        batch, heads, length, size = y.shape
        return self.to_out(y.transpose(1, 2).reshape(batch, length, heads * size))


class LandmarkPseudoInverse(_Fused):
    """Nyström approximation: softmax kernels through 4 landmarks (means of segments), the
    middle one inverted by a few Newton-Schulz steps, z <- z (c1 I - kz (c2 I - kz (c3 I - kz)))."""

    DIMS = {"T": 12}

    def pinv(self, kernel, steps=6):
        eye = torch.eye(kernel.shape[-1], dtype=kernel.dtype)
        rows = kernel.abs().sum(-1).amax(-1)[..., None, None]
        cols = kernel.abs().sum(-2).amax(-1)[..., None, None]
        z = kernel.transpose(-1, -2) / (rows * cols)
        for _ in range(steps):
            kz = kernel @ z
            z = 0.25 * z @ (13 * eye - kz @ (15 * eye - kz @ (7 * eye - kz)))
        return z

    def forward(self, x):
        q, k, v = self.qkv(x)
        q = q * self.scale
        b, h, n, d = q.shape
        q_marks = q.reshape(b, h, 4, n // 4, d).mean(-2)
        k_marks = k.reshape(b, h, 4, n // 4, d).mean(-2)
        left = (q @ k_marks.transpose(-1, -2)).softmax(dim=-1)
        middle = (q_marks @ k_marks.transpose(-1, -2)).softmax(dim=-1)
        right = (q_marks @ k.transpose(-1, -2)).softmax(dim=-1)
        return self.merge((left @ self.pinv(middle)) @ (right @ v))


class LinearAttentionElu(_Fused):
    """Katharopoulos et al.: phi(x) = elu(x) + 1, out = phi(q) (phi(k)^T v) / phi(q) sum phi(k)."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        context = torch.einsum("bhnd,bhne->bhde", k, v)
        norm = 1 / torch.einsum("bhnd,bhd->bhn", q, k.sum(dim=-2))
        return self.merge(torch.einsum("bhnd,bhde,bhn->bhne", q, context, norm))


class LinearAttentionSoftmaxed(_Fused):
    """Efficient attention: q softmaxed over its features, k over the positions."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        q = q.softmax(dim=-1) * self.scale
        k = k.softmax(dim=-2)
        context = k.transpose(-2, -1) @ v
        return self.merge(q @ context)


class RandomFeatureAttention(_Fused):
    """Performer-like: positive random features exp(w.x - |x|^2 / 2) of the scaled q and k,
    a fixed projection kept as a buffer."""

    def __init__(self, width, heads, features=17):
        super().__init__(width, heads)
        self.register_buffer("projection", torch.randn(features, width // heads))

    def feature_map(self, t):
        t = t * self.head_size ** -0.25
        return torch.exp(t @ self.projection.t() - (t ** 2).sum(-1, keepdim=True) / 2) + 1e-6

    def forward(self, x):
        q, k, v = self.qkv(x)
        q, k = self.feature_map(q), self.feature_map(k)
        context = k.transpose(-2, -1) @ v
        denominator = q @ k.sum(dim=-2).unsqueeze(-1)
        return self.merge((q @ context) / denominator)


class QueryScaledInPlace(_Fused):
    """``q *= self.scale`` on a copy of the query before the product."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        q = q.contiguous()
        q *= self.scale
        return self.merge((q @ k.transpose(-2, -1)).softmax(dim=-1) @ v)


class QueryMulInPlace(nn.Module):
    """``q.mul_(scaling)`` on the transposed query, heads split from one fused projection."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.scaling = self.size ** -0.5
        self.qkv_proj = nn.Linear(width, 3 * width)
        self.o_proj = nn.Linear(width, width)

    def forward(self, x):
        batch, length, width = x.shape
        xq, xk, xv = self.qkv_proj(x).split([width, width, width], dim=-1)
        q = xq.view(batch, length, self.heads, self.size).transpose(1, 2)
        k = xk.view(batch, length, self.heads, self.size).transpose(1, 2)
        v = xv.view(batch, length, self.heads, self.size).transpose(1, 2)
        q.mul_(self.scaling)
        scores = torch.matmul(q, k.transpose(2, 3))
        weights = F.softmax(scores.float(), dim=-1).type_as(q)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(batch, length, width)
        return self.o_proj(out)


class ScoresDividedInPlace(_Fused):
    def forward(self, x):
        q, k, v = self.qkv(x)
        scores = q @ k.transpose(-2, -1)
        scores /= math.sqrt(self.head_size)
        return self.merge(scores.softmax(dim=-1) @ v)


class SequenceFirstInPlace(nn.Module):
    """Sequence-first (T, B, C), heads folded into the batch, the projected query scaled in
    place before it is split into heads."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=T,B,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.scaling = self.size ** -0.5
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)

    def forward(self, x):
        length, batch, width = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        q *= self.scaling
        q = q.contiguous().view(length, batch * self.heads, self.size).transpose(0, 1)
        k = k.contiguous().view(-1, batch * self.heads, self.size).transpose(0, 1)
        v = v.contiguous().view(-1, batch * self.heads, self.size).transpose(0, 1)
        weights = F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        out = torch.bmm(weights, v).transpose(0, 1).contiguous()
        return out.view(length, batch, width)


class WeightsScaledAfterSoftmax(_Fused):
    BUG = "unnormalized-attention"

    def forward(self, x):
        q, k, v = self.qkv(x)
        weights = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        weights = weights * self.scale  # BUG
        return self.merge(weights @ v)


class QueryScaledInPlaceAndScores(_Fused):
    BUG = "attention-scale"

    def forward(self, x):
        q, k, v = self.qkv(x)
        q = q.contiguous()
        q *= self.scale
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)  # BUG
        return self.merge(scores.softmax(dim=-1) @ v)


class QueryScaledInPlaceByWidth(SequenceFirstInPlace):
    BUG = "attention-scale"

    def __init__(self, width, heads):
        super().__init__(width, heads)
        self.scaling = width ** -0.5  # BUG

    def forward(self, x):
        length, batch, width = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        q *= self.scaling
        q = q.contiguous().view(length, batch * self.heads, self.size).transpose(0, 1)
        k = k.contiguous().view(-1, batch * self.heads, self.size).transpose(0, 1)
        v = v.contiguous().view(-1, batch * self.heads, self.size).transpose(0, 1)
        weights = F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        out = torch.bmm(weights, v).transpose(0, 1).contiguous()
        return out.view(length, batch, width)


class ScoresOverNumpyRootOfWidth(nn.Module):
    """Scores divided by a root the constructor takes with numpy, of the width, not the head size."""

    BUG = "attention-scale"
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.root = np.sqrt(width)  # BUG
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.size).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) / self.root
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class ScoresOverRootOfWidthTakenInPlace(nn.Module):
    """Per-head inputs; the width is worked out from them on a line of its own and its root is
    taken where the scores are divided: that line chose the factor."""

    BUG = "attention-scale"
    INPUTS = ["q=B,H,T,d", "k=B,H,T,d", "v=B,H,T,d"]

    def forward(self, q, k, v):
        batch, heads, length, size = k.shape
        width = heads * size
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(width)  # BUG
        return scores.softmax(dim=-1) @ v


class _Biased(_Fused):
    """A learned bias per head and relative distance, and ALiBi slopes, on the scores."""

    DIMS = {"T": 7}

    def __init__(self, width, heads):
        super().__init__(width, heads)
        self.distance_bias = nn.Parameter(torch.randn(heads, 2 * 7 - 1))
        slopes = 2.0 ** -torch.arange(1, heads + 1, dtype=torch.float32)
        self.register_buffer("slopes", slopes[:, None, None])

    def table(self, length):
        position = torch.arange(length)
        relative = position[None, :] - position[:, None] + length - 1
        return self.distance_bias[:, relative]


class RelativeAndAlibi(_Biased):
    """Two different terms on the scores: a learned relative-position table and ALiBi."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        length = x.shape[1]
        position = torch.arange(length)
        alibi = -self.slopes * (position[None, :] - position[:, None]).abs()
        scores = q @ k.transpose(-2, -1) * self.scale + self.table(length)
        scores = scores + alibi
        return self.merge(scores.softmax(dim=-1) @ v)


class RelativeBiasAddedTwice(_Biased):
    BUG = "attention-textbook"

    def forward(self, x):
        q, k, v = self.qkv(x)
        bias = self.table(x.shape[1])
        scores = q @ k.transpose(-2, -1) * self.scale + bias
        scores = scores + bias  # BUG
        return self.merge(scores.softmax(dim=-1) @ v)


class KeyBias(_Biased):
    """A learned bias per key position, broadcast over the queries: it varies along the keys."""

    def __init__(self, width, heads):
        super().__init__(width, heads)
        self.key_bias = nn.Parameter(torch.randn(7))

    def forward(self, x):
        q, k, v = self.qkv(x)
        scores = q @ k.transpose(-2, -1) * self.scale
        scores = scores + self.key_bias.view(1, 1, 1, -1)
        return self.merge(scores.softmax(dim=-1) @ v)


class KeyBiasOverQueries(KeyBias):
    BUG = "attention-textbook"

    def forward(self, x):
        q, k, v = self.qkv(x)
        scores = q @ k.transpose(-2, -1) * self.scale
        per_key = self.key_bias.unsqueeze(-1)
        scores = scores + per_key  # BUG
        return self.merge(scores.softmax(dim=-1) @ v)


class KeyScaledInPlace(_Fused):
    """``k *= self.scale`` on the key, split into heads by a view of a fused projection."""

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (z.reshape(batch, length, self.heads, self.head_size).transpose(1, 2)
                   for z in (q, k, v))
        k *= self.scale
        return self.merge((q @ k.transpose(-2, -1)).softmax(dim=-1) @ v)


class ChunkScaledInPlaceEinsum(_Fused):
    """The query chunk of a fused projection (a view) scaled in place before its heads are split
    with einops; scores and output by einsum."""

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q *= self.scale
        q, k, v = (rearrange(z, "b t (h d) -> b h t d", h=self.heads) for z in (q, k, v))
        weights = torch.einsum("bhid,bhjd->bhij", q, k).softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", weights, v)
        return self.to_out(rearrange(out, "b h t d -> b t (h d)"))


class ScoresScaledAndMaskedInPlace(_Fused):
    """Causal: the scores scaled with ``mul_`` and masked with ``masked_fill_``."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        length = x.shape[1]
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores.mul_(self.scale)
        future = torch.ones(length, length, dtype=torch.bool).triu(1)
        scores.masked_fill_(future, float("-inf"))
        return self.merge(F.softmax(scores, dim=-1) @ v)


class GroupedQueryViewScaledInPlace(nn.Module):
    """Grouped-query attention (one key/value head): the query scaled in place on its view
    (B, T, H, d) before the transpose."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.scale = self.size ** -0.5
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * self.size)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        batch, length, width = x.shape
        q = self.q(x).view(batch, length, self.heads, self.size)
        q.mul_(self.scale)
        q = q.transpose(1, 2)
        k, v = self.kv(x).view(batch, length, 2, 1, self.size).permute(2, 0, 3, 1, 4)
        k = k.expand(batch, self.heads, length, self.size)
        v = v.expand(batch, self.heads, length, self.size)
        weights = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, length, width))


class ReverseReusesTheWeights(_Fused):
    """The weights of a first pass reused, transposed, for a pass the other way, over values
    computed from the first pass's output: normalised over the keys, contracted over the queries.
    The values are made from the weights only through a contraction with other values, so the
    reuse is judged as attention (unlike a Newton-Schulz iterate)."""

    BUG = "softmax-axis"

    def forward(self, x):
        q, k, v = self.qkv(x)
        weights = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        x = x + self.merge(weights @ v)
        _, _, back = self.qkv(x)
        return self.merge(weights.transpose(-2, -1) @ back)  # BUG
