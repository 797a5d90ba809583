"""Correct modules that a behaviour check might take for a leak, a random eval or a mutation.

Each class has ``INPUTS`` (and ``INIT`` / ``DIMS`` when needed); none may give an error or a
warning."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_attention(x, qkv, heads):
    B, T, C = x.shape
    q, k, v = qkv(x).chunk(3, dim=-1)
    q, k, v = [t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v)]
    scores = q @ k.transpose(-2, -1) / math.sqrt(C // heads)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class _Causal(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)


class CausalBatchNorm(_Causal):
    """BatchNorm1d over channels: batch statistics in training, running ones in eval."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.bn = nn.BatchNorm1d(dim)

    def forward(self, x):
        x = self.bn(x.transpose(1, 2)).transpose(1, 2)
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalGroupNorm(_Causal):
    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.gn = nn.GroupNorm(1, dim)

    def forward(self, x):
        B, T, C = x.shape
        x = self.gn(x.reshape(B * T, C)).view(B, T, C)
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalDropPath(_Causal):
    """Stochastic depth: a whole residual branch dropped per sample, in training only."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.drop_prob = 0.2

    def drop_path(self, x):
        if not self.training or self.drop_prob == 0.0:
            return x
        keep = torch.rand(x.shape[0], 1, 1, dtype=x.dtype) >= self.drop_prob
        return x * keep / (1 - self.drop_prob)

    def forward(self, x):
        return x + self.drop_path(self.proj(causal_attention(x, self.qkv, self.heads)))


class CausalNoiseInTraining(_Causal):
    def forward(self, x):
        if self.training:
            x = x + 0.1 * torch.randn_like(x)
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalWithCache(_Causal):
    """Keys and values kept across calls for streaming generation, cleared by ``reset()``."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.cache = None

    def reset(self):
        self.cache = None

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if self.cache is not None and self.cache[0].shape[0] == B:
            k = torch.cat([self.cache[0], k], dim=1)
            v = torch.cat([self.cache[1], v], dim=1)
        self.cache = (k.detach(), v.detach())
        P = k.shape[1] - T
        scores = q @ k.transpose(-2, -1) / math.sqrt(C)
        mask = torch.ones(T, P + T, dtype=torch.bool).tril(diagonal=P)
        scores = scores.masked_fill(~mask, float("-inf"))
        return self.proj(scores.softmax(-1) @ v)


class CausalRunningStats(_Causal):
    """An EMA of the feature mean, updated in training only and used in eval."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.register_buffer("running_mean", torch.zeros(dim))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_mean.lerp_(x.mean((0, 1)), 0.1)
        self.steps += 1
        x = x - self.running_mean
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalStepCounter(_Causal):
    """Counts calls in a buffer; the output does not depend on the count."""

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.calls += 1
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalNoGradMask(_Causal):
    """The mask is built under no_grad, from sizes only."""

    def forward(self, x):
        B, T, C = x.shape
        with torch.no_grad():
            keep = torch.ones(T, T).tril().bool()
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(C)).masked_fill(~keep, float("-inf"))
        return self.proj(scores.softmax(-1) @ v)


class CausalDetachedCumulativeScale(_Causal):
    """A stop-gradient normaliser over the prefix only: causal."""

    def forward(self, x):
        T = x.shape[1]
        count = torch.arange(1, T + 1, dtype=x.dtype).view(1, T, 1)
        scale = (x.pow(2).cumsum(1) / count).add(1e-5).rsqrt().detach()
        return self.proj(causal_attention(x * scale, self.qkv, self.heads))


class CausalDictOutput(_Causal):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C)
        scores = scores.masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))
        att = scores.softmax(-1)
        return {"hidden": self.proj(att @ v), "attentions": att}


@dataclass
class Out:
    last_hidden_state: torch.Tensor
    loss: torch.Tensor


class CausalDataclassLoss(_Causal):
    def forward(self, x):
        h = self.proj(causal_attention(x, self.qkv, self.heads))
        return (h, h.pow(2).mean())


class CausalLeftPadded(_Causal):
    """Left padding: position ids from the cumulative sum of the mask, padded keys masked."""

    INPUTS = ["x=B,T,C", "attention_mask=B,T:long:2"]

    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.pos = nn.Embedding(64, dim)

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        mask = attention_mask.long()
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        x = x + self.pos(position_ids)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C)
        allowed = torch.ones(T, T, dtype=torch.bool).tril() & mask.bool()[:, None, :]
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        return self.proj(scores.softmax(-1) @ v)


class CausalLearnedPositions(_Causal):
    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.pos = nn.Parameter(torch.randn(32, dim) * 0.02)

    def forward(self, x):
        x = x + self.pos[: x.shape[1]]
        return self.proj(causal_attention(x, self.qkv, self.heads))


class CausalConvAttention(_Causal):
    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.conv = nn.Conv1d(dim, dim, 3)

    def forward(self, x):
        h = self.conv(F.pad(x.transpose(1, 2), (2, 0))).transpose(1, 2)
        return self.proj(causal_attention(h, self.qkv, self.heads))


class CausalGRU(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, dim):
        super().__init__()
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, x):
        out, _ = self.rnn(x)
        return out


class CausalCumMax(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        return torch.cummax(h, dim=1).values - torch.cummin(h, dim=1).values


class CausalCumsumNorm(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]
    causal = True

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        T = x.shape[1]
        mean = x.cumsum(1) / torch.arange(1, T + 1, dtype=x.dtype).view(1, T, 1)
        return self.lin(x - mean)


class GPTTokens(nn.Module):
    INIT = {"vocab": "V", "dim": "C", "heads": "H"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab, dim, heads):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(32, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        return self.head(causal_attention(x, self.qkv, self.heads))


class PerSampleTable(nn.Module):
    """Each sample's output depends on its own index into a table."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "speaker=B:long:16"]

    def __init__(self, dim):
        super().__init__()
        self.table = nn.Parameter(torch.randn(16, dim))

    def forward(self, x, speaker):
        return x + self.table[speaker % 16][:, None, :]


class ListInput(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "y=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x, y):
        return self.lin(torch.stack([x, y]).sum(0))


class CloneThenAddInPlace(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(32, dim))
        self.cls = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        x = x.clone()
        x += self.pos[: x.shape[1]]
        x[:, 0] = self.cls
        return x.add_(1.0)


class ReluOnCopy(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        return F.relu(h, inplace=True)


class UnsqueezeInPlaceOnInput(nn.Module):
    """``unsqueeze_`` changes the caller's tensor's shape, not its values."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        y = x.detach().clone()
        y.unsqueeze_(1)
        return self.lin(y.squeeze(1))


class ClassifierMeanPool(nn.Module):
    """Causal attention inside, mean pooled over time: no output position, nothing to leak."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        return self.head(causal_attention(x, self.qkv, self.heads).mean(dim=1))


class CausalAttnPoolClassifier(nn.Module):
    """Causal attention, then attention pooling over T (a softmax over positions)."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.score = nn.Linear(dim, 1)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        s = (q @ k.transpose(-2, -1) / math.sqrt(C)).masked_fill(
            torch.ones(T, T).tril() == 0, float("-inf"))
        h = s.softmax(-1) @ v
        w = self.score(h).softmax(dim=1)
        return self.head((w * h).sum(1))


class ContrastiveLoss(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["a=B,C", "b=B,C"]

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, a, b):
        za, zb = F.normalize(self.lin(a), dim=-1), F.normalize(self.lin(b), dim=-1)
        logits = za @ zb.T
        return F.cross_entropy(logits, torch.arange(a.shape[0]))


class GPTEmaInEval(nn.Module):
    """EMA updated in every call (eval too) after use; deterministic given state."""
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.register_buffer("ema", torch.zeros(dim))
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        out = self.lin(x - self.ema)
        with torch.no_grad():
            self.ema.lerp_(x.mean((0, 1)), 0.1)
        return out.cumsum(1)


class Top1MoECapacity(nn.Module):
    """Top-1 routing with an expert capacity that every token fits in at these sizes."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, experts=4, capacity=8):
        super().__init__()
        self.gate = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))
        self.capacity = capacity

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(B * T, C)
        choice = self.gate(flat).argmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            idx = (choice == e).nonzero().flatten()[: self.capacity * B]
            out[idx] = expert(flat[idx])
        return (flat + out).view(B, T, C)
