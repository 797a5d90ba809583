"""silent-broadcast, on the legal broadcasts of other libraries and papers: a learned per-head
bias (1, H, 1, 1), ALiBi slopes times a (T, T) distance table, T5/Shaw relative position
tables, a (B, 1, 1, T) padding mask against (B, H, T, T) scores, multi-query keys with one
head, Perceiver latents shared over the batch, RetNet's per-head decay; and the real
outer-product slips ``(B,) - (B, 1)`` and a (B, 1) prediction against a (B,) target."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def qkv_heads(self, x):
        B, T, _ = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)
        return qkv[0], qkv[1], qkv[2]

    def scores(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(self.d_head)

    def merge(self, attn, v):
        B, _, T, _ = v.shape
        return self.out((attn @ v).transpose(1, 2).reshape(B, T, self.d_model))


class PerHeadBias(_Heads):
    """A learned bias per head, shaped (1, H, 1, 1), added to every score of that head."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.head_bias = nn.Parameter(torch.zeros(1, n_head, 1, 1))

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        return self.merge((self.scores(q, k) + self.head_bias).softmax(-1), v)


class AlibiSlopes(_Heads):
    """ALiBi (Press et al.): geometric slopes per head times the (T, T) distance, causal."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv_heads(x)
        H = self.n_head
        slopes = torch.tensor([2 ** (-8 * (i + 1) / H) for i in range(H)])
        pos = torch.arange(T)
        distance = pos[None, :] - pos[:, None]
        alibi = slopes[:, None, None] * distance[None, :, :]
        scores = self.scores(q, k) + alibi
        scores = scores.masked_fill(distance > 0, float("-inf"))
        return self.merge(scores.softmax(-1), v)


class ShawRelativeTable(_Heads):
    """Clipped relative positions looked up in an embedding table, one bias per head."""

    def __init__(self, d_model, n_head, max_distance=4):
        super().__init__(d_model, n_head)
        self.max_distance = max_distance
        self.rel = nn.Embedding(2 * max_distance + 1, n_head)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        context = torch.arange(T)[:, None]
        memory = torch.arange(T)[None, :]
        relative = (memory - context).clamp(-self.max_distance, self.max_distance)
        bias = self.rel(relative + self.max_distance).permute(2, 0, 1).unsqueeze(0)
        return self.merge((self.scores(q, k) + bias).softmax(-1), v)


class T5Buckets(_Heads):
    """T5's bidirectional log-spaced buckets of the relative position, no scale (T5 folds it
    into its initialisation, which the rule can only warn about)."""

    ALLOWED = {"attention-scale": "not scaled"}

    def __init__(self, d_model, n_head, num_buckets=8, max_distance=16):
        super().__init__(d_model, n_head)
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, n_head)

    def bucket(self, relative_position):
        n = self.num_buckets // 2
        ret = (relative_position > 0).long() * n
        relative_position = relative_position.abs()
        max_exact = n // 2
        is_small = relative_position < max_exact
        large = max_exact + (
            torch.log(relative_position.float() / max_exact) / math.log(self.max_distance / max_exact)
            * (n - max_exact)).long()
        large = torch.min(large, torch.full_like(large, n - 1))
        return ret + torch.where(is_small, relative_position, large)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        context_position = torch.arange(T, dtype=torch.long)[:, None]
        memory_position = torch.arange(T, dtype=torch.long)[None, :]
        buckets = self.bucket(memory_position - context_position)
        bias = self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)
        scores = torch.matmul(q, k.transpose(3, 2)) + bias
        return self.merge(F.softmax(scores.float(), dim=-1).type_as(scores), v)


class PaddingMaskB11T(_Heads):
    """Hugging Face's extended attention mask: (B, T) -> (B, 1, 1, T), added as finfo.min."""

    INPUTS = ["x=B,T,C", "attention_mask=B,T:long:2"]

    def forward(self, x, attention_mask):
        q, k, v = self.qkv_heads(x)
        extended = attention_mask[:, None, None, :].to(x.dtype)
        extended = (1.0 - extended) * torch.finfo(x.dtype).min
        return self.merge((self.scores(q, k) + extended).softmax(-1), v)


class PaddingMaskFilled(_Heads):
    """The same padding mask as a boolean, used with masked_fill (B, 1, 1, T)."""

    INPUTS = ["x=B,T,C", "attention_mask=B,T:long:2"]

    def forward(self, x, attention_mask):
        q, k, v = self.qkv_heads(x)
        pad = (attention_mask == 0).unsqueeze(1).unsqueeze(2)
        scores = self.scores(q, k).masked_fill(pad, float("-inf"))
        return self.merge(scores.softmax(-1), v)


class MultiQueryOneKeyHead(nn.Module):
    """Multi-query attention (Shazeer 2019): one key/value head shared by all query heads,
    broadcast by the matmul, not expanded."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_head = n_head, d_model // n_head
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * self.d_head)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
        k, v = self.kv(x).unsqueeze(1).split(self.d_head, dim=-1)
        attn = (q @ k.transpose(-2, -1) * self.d_head ** -0.5).softmax(-1)
        return self.o((attn @ v).transpose(1, 2).reshape(B, T, C))


class PerceiverLatents(nn.Module):
    """Perceiver: a learned (1, N, C) latent array cross-attends to every sample's inputs."""

    INIT = {"dim": "C", "num_latents": "S"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_latents):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(1, num_latents, dim) * 0.02)
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.scale = dim ** -0.5

    def forward(self, x):
        q = self.to_q(self.latents)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        attn = (torch.matmul(q, k.transpose(1, 2)) * self.scale).softmax(dim=-1)
        return torch.matmul(attn, v)


class RetentionDecay(_Heads):
    """RetNet: a per-head decay gamma ** (n - m) below the diagonal, no softmax."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv_heads(x)
        gamma = 1 - 2.0 ** (-5 - torch.arange(self.n_head, dtype=x.dtype))
        n = torch.arange(T, dtype=x.dtype)
        exponent = n[:, None] - n[None, :]
        decay = gamma[:, None, None] ** exponent.clamp(min=0) * (exponent >= 0)
        retention = (q @ k.transpose(-2, -1)) * decay
        out = retention @ v
        return self.out(out.transpose(1, 2).reshape(B, T, C))


class GateMinusBaseline(nn.Module):
    """A (B,) gate minus a (B, 1) baseline: (B, B), every sample against every other."""

    BUG = "silent-broadcast"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Linear(dim, 1)
        self.baseline = nn.Linear(dim, 1)

    def forward(self, x):
        pooled = x.mean(dim=1)
        gate = self.gate(pooled).squeeze(-1)
        baseline = self.baseline(pooled)
        g = torch.sigmoid(gate - baseline)  # BUG
        return x * g.mean(dim=-1)[:, None, None]


class RegressionHeadAgainstTarget(nn.Module):
    """The head's (B, 1) prediction against a (B,) target: the loss averages a (B, B) table."""

    BUG = "silent-broadcast"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "target=B"]

    def __init__(self, dim):
        super().__init__()
        self.head = nn.Linear(dim, 1)

    def forward(self, x, target):
        pred = self.head(x.mean(dim=1))
        return ((pred - target) ** 2).mean()  # BUG


class RegressionHeadSqueezed(nn.Module):
    """The twin done right: the prediction squeezed to (B,) first."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "target=B"]

    def __init__(self, dim):
        super().__init__()
        self.head = nn.Linear(dim, 1)

    def forward(self, x, target):
        pred = self.head(x.mean(dim=1)).squeeze(-1)
        return F.mse_loss(pred, target)
