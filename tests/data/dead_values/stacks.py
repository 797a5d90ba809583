"""Module calls whose outputs are dropped: a block's output thrown away while its cache is kept,
a block called on its own line as if it changed its input, a feed-forward ``nn.Sequential``
built and set up and never called; and the drops that are right: the
attention weights a block also returns, nn.MultiheadAttention's averaged weights, a recurrent
encoder's per-step outputs when only its last state is wanted, a cache written in place."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CachingBlock(nn.Module):
    """Attention that returns its output and the keys and values it made (for a cache)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.proj(y.transpose(1, 2).reshape(B, T, C)), (k, v)


class CachingStack(nn.Module):
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList(CachingBlock(width, heads) for _ in range(depth))
        self.final = nn.LayerNorm(width)

    def forward(self, x):
        caches = []
        h = x
        for block in self.blocks:
            h, cache = block(h)
            caches.append(cache)
        return self.final(h), caches


class CachingStackOutputDropped(CachingStack):
    BUG = "discarded-result"

    def forward(self, x):
        caches = []
        h = x
        for block in self.blocks:
            out, cache = block(h)  # BUG
            caches.append(cache)
        return self.final(h), caches


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.ff(x)


class ResidualStackCalledAlone(nn.Module):
    """Each block called on its own line, as if it changed h in place."""

    BUG = "discarded-result"
    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, depth=2):
        super().__init__()
        self.layers = nn.ModuleList(Residual(width) for _ in range(depth))

    def forward(self, x):
        h = x * 1.0
        for layer in self.layers:
            layer(h)  # BUG
        return h


class ReturnsWeights(nn.Module):
    """Attention that also returns its weights, for whoever wants to look at them."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)).softmax(-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y), weights.mean(dim=1)


class WeightsNotWanted(nn.Module):
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.first = ReturnsWeights(width, heads)
        self.second = ReturnsWeights(width, heads)
        self.mha = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x):
        h, weights = self.first(x)
        h, _ = self.second(h)
        out, averaged = self.mha(h, h, h)
        return out


class LastStateOnly(nn.Module):
    """A recurrent encoder whose per-step outputs are not needed: only the last state."""

    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.encoder = _Encoder(width)
        self.head = nn.Linear(width, 2)

    def forward(self, x):
        steps, last = self.encoder(x)
        return self.head(last)


class _Encoder(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.rnn = nn.GRU(width, width, batch_first=True)

    def forward(self, x):
        steps, last = self.rnn(x)
        return steps, last[-1]


class CacheWrittenInPlace(nn.Module):
    """Keys and values written into preallocated buffers and attended to from there."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads, capacity=32):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(width, width)
        self.to_kv = nn.Linear(width, 2 * width)
        self.out = nn.Linear(width, width)
        self.register_buffer("keys", torch.zeros(8, capacity, width), persistent=False)
        self.register_buffer("values", torch.zeros(8, capacity, width), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        k, v = self.to_kv(x).chunk(2, dim=-1)
        self.keys[:B, :T] = k
        self.values[:B, :T] = v
        q = self.to_q(x).view(B, T, self.heads, -1).transpose(1, 2)
        k = self.keys[:B, :T].view(B, T, self.heads, -1).transpose(1, 2)
        v = self.values[:B, :T].view(B, T, self.heads, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))



class _ConditionedBlock(nn.Module):
    """A block whose norms are shifted and scaled by a condition, and whose feed-forward is an
    ``nn.Sequential`` set up in ``__init__`` (its last layer zeroed)."""

    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C", "condition=B,C"]

    def __init__(self, width):
        super().__init__()
        self.norm1 = nn.LayerNorm(width, elementwise_affine=False)
        self.norm2 = nn.LayerNorm(width, elementwise_affine=False)
        self.mix = nn.Linear(width, width)
        self.modulation = nn.Linear(width, 4 * width)

    def feed_forward_of(self, width):
        layers = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        nn.init.zeros_(layers[-1].weight)
        return layers

    def modulated(self, norm, x, shift, scale):
        return norm(x) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class FeedForwardCalled(_ConditionedBlock):
    def __init__(self, width):
        super().__init__(width)
        self.feed_forward = self.feed_forward_of(width)
        nn.init.zeros_(self.feed_forward[-1].bias)

    def forward(self, x, condition):
        shift1, scale1, shift2, scale2 = self.modulation(condition).chunk(4, dim=-1)
        x = x + self.mix(self.modulated(self.norm1, x, shift1, scale1))
        return x + self.feed_forward(self.modulated(self.norm2, x, shift2, scale2))


class FeedForwardNeverCalled(_ConditionedBlock):
    """The second sublayer calls the first one's layer again: the feed-forward is never used."""

    BUG = "discarded-result"
    SEVERITY = "warning"

    def __init__(self, width):
        super().__init__(width)
        self.feed_forward = self.feed_forward_of(width)  # BUG
        nn.init.zeros_(self.feed_forward[-1].bias)

    def forward(self, x, condition):
        shift1, scale1, shift2, scale2 = self.modulation(condition).chunk(4, dim=-1)
        x = x + self.mix(self.modulated(self.norm1, x, shift1, scale1))
        return x + self.mix(self.modulated(self.norm2, x, shift2, scale2))


class _TwoNormBlock(nn.Module):
    """A pre-norm block with a norm of its own for each sublayer."""

    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.attn_norm = nn.LayerNorm(width)
        self.ff_norm = nn.LayerNorm(width)
        self.mix = nn.Linear(width, width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))


class EachSublayerItsNorm(_TwoNormBlock):
    def forward(self, x):
        x = x + self.mix(self.attn_norm(x))
        return x + self.ff(self.ff_norm(x))


class FeedForwardTakesTheAttentionNorm(_TwoNormBlock):
    """The feed-forward's pre-norm calls the attention's norm again: the feed-forward's own norm,
    of the same shape, is never called, and its gain and bias never reach the output."""

    BUG = "discarded-result"

    def forward(self, x):
        x = x + self.mix(self.attn_norm(x))
        return x + self.ff(self.attn_norm(x))  # BUG


class OneNormShared(nn.Module):
    """One norm, used before both sublayers on purpose: nothing was left unused."""

    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mix = nn.Linear(width, width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        x = x + self.mix(self.norm(x))
        return x + self.ff(self.norm(x))
