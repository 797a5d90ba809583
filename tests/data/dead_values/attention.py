"""Values computed and never used, found by following each value through the ops that read it:
a projection overwritten before anything reads it (also after a branch that only widens it,
``v = v.expand(...)``), a softmax replaced by what it was computed from, a block's output dropped while its cache is kept, a layer defined and never called; and
correct modules in several styles (fused qkv, einsum, SDPA, grouped-query, cross-attention with
its branch not taken, a cache filled in place, weights returned for inspection, a layer used
only when generating) that must stay quiet."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


def _split(t, n_head):
    B, T, C = t.shape
    return t.view(B, T, n_head, C // n_head).transpose(1, 2)


def _merge(t):
    B, H, T, d = t.shape
    return t.transpose(1, 2).reshape(B, T, H * d)


class SeparateProjections(nn.Module):
    """Three projections, scores by hand, an output projection."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        q = _split(self.query(x), self.heads)
        k = _split(self.key(x), self.heads)
        v = _split(self.value(x), self.heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = scores.softmax(dim=-1)
        return self.out(_merge(weights @ v))


class QueryProjectionOverwritten(SeparateProjections):
    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q = self.query(x)
        q = x.view(B, T, self.heads, C // self.heads).transpose(1, 2)  # BUG
        k = _split(self.key(x), self.heads)
        v = _split(self.value(x), self.heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return self.out(_merge(scores.softmax(dim=-1) @ v))


class KeyProjectionReshapedThenLost(SeparateProjections):
    """The projection goes through a reshape first; the reshaped copy is then overwritten."""

    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q = _split(self.query(x), self.heads)
        projected = self.key(x)
        k = projected.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = x.view(B, T, self.heads, C // self.heads).transpose(1, 2)  # BUG
        v = _split(self.value(x), self.heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return self.out(_merge(scores.softmax(dim=-1) @ v))


class SoftmaxReplacedByDropout(SeparateProjections):
    BUG = "discarded-result"

    def __init__(self, width, heads):
        super().__init__(width, heads)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        q = _split(self.query(x), self.heads)
        k = _split(self.key(x), self.heads)
        v = _split(self.value(x), self.heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = scores.softmax(dim=-1)
        weights = self.drop(scores)  # BUG
        return self.out(_merge(weights @ v))


class ScoresComputedTwice(SeparateProjections):
    """A first product of q and k, overwritten by a second one that nobody compares."""

    BUG = "discarded-result"

    def forward(self, x):
        q = _split(self.query(x), self.heads)
        k = _split(self.key(x), self.heads)
        v = _split(self.value(x), self.heads)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, v) / math.sqrt(q.shape[-1])  # BUG
        return self.out(_merge(scores.softmax(dim=-1) @ v))


class OutputProjectionNeverCalled(nn.Module):
    BUG = "discarded-result"
    SEVERITY = "warning"
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.mix = nn.Linear(width, width)  # BUG

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (_split(t, self.heads) for t in (q, k, v))
        return _merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))


class _Projection(nn.Module):
    """A project's own wrapper around a linear layer (its weights initialised its own way)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.inner = nn.Linear(n_in, n_out)
        nn.init.xavier_uniform_(self.inner.weight)

    def forward(self, x):
        return self.inner(x)


class KeyProjectionOfItsOwnNeverCalled(nn.Module):
    """Keys and values projected with the queries' wrapper: the keys' and values' own wrappers
    are built and never called."""

    BUG = "discarded-result"
    SEVERITY = "warning"
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.to_q = _Projection(width, width)
        self.to_k = _Projection(width, width)  # BUG
        self.out = nn.Linear(width, width)

    def forward(self, x):
        q, k, v = (_split(self.to_q(x), self.heads) for _ in range(3))
        return self.out(_merge(F.scaled_dot_product_attention(q, k, v)))


class ContextNormNeverCalled(nn.Module):
    """Cross-attention whose context is normalised with the queries' norm: the context's own
    norm is built and never called."""

    BUG = "discarded-result"
    SEVERITY = "warning"
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C", "context=B,S,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(width)
        self.norm_context = nn.LayerNorm(width)  # BUG
        self.q, self.kv = nn.Linear(width, width), nn.Linear(width, 2 * width)

    def forward(self, x, context):
        x, context = self.norm(x), self.norm(context)
        k, v = self.kv(context).chunk(2, dim=-1)
        q, k, v = (_split(t, self.heads) for t in (self.q(x), k, v))
        return _merge(F.scaled_dot_product_attention(q, k, v))


class ContextNormCalled(ContextNormNeverCalled):
    BUG = None

    def forward(self, x, context):
        x, context = self.norm(x), self.norm_context(context)
        k, v = self.kv(context).chunk(2, dim=-1)
        q, k, v = (_split(t, self.heads) for t in (self.q(x), k, v))
        return _merge(F.scaled_dot_product_attention(q, k, v))


class FusedQKV(nn.Module):
    """One projection split three ways; the output projection applied."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.mix = nn.Linear(width, width)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (_split(t, self.heads) for t in (q, k, v))
        return self.mix(_merge(F.scaled_dot_product_attention(q, k, v, is_causal=True)))


class ValuesPieceUnused(FusedQKV):
    """The keys stand in for the values: the value third of the projection is never read."""

    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)  # BUG
        q, k = (_split(t, self.heads) for t in (q, k))
        return self.mix(_merge(F.scaled_dot_product_attention(q, k, k, is_causal=True)))


class ValuesMadeFromKeys(FusedQKV):
    """A one-letter slip: the values are reshaped from the keys, so the value third is lost."""

    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        v = _split(k, self.heads)  # BUG
        q = _split(q, self.heads)
        k = _split(k, self.heads)
        return self.mix(_merge(F.scaled_dot_product_attention(q, k, v, is_causal=True)))


class EinopsHeads(nn.Module):
    """Heads split and merged with einops."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(width, width, bias=False)
        self.to_kv = nn.Linear(width, 2 * width, bias=False)
        self.to_out = nn.Linear(width, width)

    def forward(self, x):
        q = rearrange(self.to_q(x), "b t (h d) -> b h t d", h=self.heads)
        k, v = rearrange(self.to_kv(x), "b t (two h d) -> two b h t d", two=2, h=self.heads)
        att = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
        out = torch.einsum("bhij,bhjd->bhid", att.softmax(dim=-1), v)
        return self.to_out(rearrange(out, "b h t d -> b t (h d)"))


class EinopsQueriesFromInput(EinopsHeads):
    BUG = "discarded-result"

    def forward(self, x):
        q = rearrange(self.to_q(x), "b t (h d) -> b h t d", h=self.heads)
        q = rearrange(x, "b t (h d) -> b h t d", h=self.heads)  # BUG
        k, v = rearrange(self.to_kv(x), "b t (two h d) -> two b h t d", two=2, h=self.heads)
        att = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
        out = torch.einsum("bhij,bhjd->bhid", att.softmax(dim=-1), v)
        return self.to_out(rearrange(out, "b h t d -> b t (h d)"))


class GroupedQueries(nn.Module):
    """Grouped-query attention: fewer key/value heads, repeated in place."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.kv_heads = heads, 1
        self.head_dim = width // heads
        self.wq = nn.Linear(width, width, bias=False)
        self.wkv = nn.Linear(width, 2 * self.head_dim, bias=False)
        self.wo = nn.Linear(width, width, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.wkv(x).view(B, T, 2, self.kv_heads, self.head_dim).unbind(2)
        k = k.transpose(1, 2).repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.transpose(1, 2).repeat_interleave(self.heads // self.kv_heads, dim=1)
        y = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.head_dim ** -0.5
        y = torch.einsum("bhqk,bhkd->bhqd", y.softmax(-1), v)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class CrossAttentionOptional(nn.Module):
    """Self-attention, plus attention to a context when one is given: run without one, the
    context's projections are never called, and that is right."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(width, 3 * width)
        self.ctx_q = nn.Linear(width, width)
        self.ctx_kv = nn.Linear(width, 2 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x, context=None):
        q, k, v = (_split(t, self.heads) for t in self.to_qkv(x).chunk(3, dim=-1))
        h = _merge(F.scaled_dot_product_attention(q, k, v))
        if context is not None:
            cq = _split(self.ctx_q(h), self.heads)
            ck, cv = (_split(t, self.heads) for t in self.ctx_kv(context).chunk(2, dim=-1))
            h = h + _merge(F.scaled_dot_product_attention(cq, ck, cv))
        return self.proj(h)


class KeyFromMemoryWhenGiven(SeparateProjections):
    """The key projection of x is replaced by the memory's when a memory is given: a value
    dropped on one path only, which the code does use on the other."""

    INPUTS = ["x=B,T,C", "memory=B,T,C"]

    def forward(self, x, memory=None):
        q = _split(self.query(x), self.heads)
        k = self.key(x)
        if memory is not None:
            k = self.key(memory)
        k = _split(k, self.heads)
        v = _split(self.value(x), self.heads)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
        return self.out(_merge(weights @ v))


class WeightsKeptForPlots(SeparateProjections):
    """The attention weights kept on the module for a plot, and checked while debugging."""

    def forward(self, x):
        q = _split(self.query(x), self.heads)
        k = _split(self.key(x), self.heads)
        v = _split(self.value(x), self.heads)
        raw = q @ k.transpose(-2, -1)
        assert torch.isfinite(raw).all()
        weights = (raw / math.sqrt(q.shape[-1])).softmax(-1)
        self.last_weights = weights.detach()
        return self.out(_merge(weights @ v))


class ShapeOnlyPeek(SeparateProjections):
    """Scores computed, and only their shape printed: the line still names them afterwards."""

    def forward(self, x):
        q = _split(self.query(x), self.heads)
        k = _split(self.key(x), self.heads)
        v = _split(self.value(x), self.heads)
        scores = q @ k.transpose(-2, -1)
        _ = scores.shape
        weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
        return self.out(_merge(weights @ v))


class TiedHead(nn.Module):
    """A language model whose output layer shares the embedding's weight and is applied as a
    product with it: the head is never called, and its weight is read."""

    INIT = {"vocab": "V", "width": "C"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab, width):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, idx):
        return self.embed(idx) @ self.embed.weight.T


class FunctionalWeights(nn.Module):
    """A layer's weights read with F.linear rather than by calling the layer."""

    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return F.linear(x, self.lin.weight, self.lin.bias)


class LayerForGenerating(nn.Module):
    """A layer only the generation method calls."""

    INIT = {"vocab": "V", "width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, vocab, width):
        super().__init__()
        self.body = nn.Linear(width, width)
        self.to_vocab = nn.Linear(width, vocab)

    def forward(self, x):
        return self.body(x)

    @torch.no_grad()
    def generate(self, x):
        return self.to_vocab(self.forward(x)).argmax(-1)


class PreNormBlock(nn.Module):
    """A pre-norm block: the norm's output is what q, k and v are projected from."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        h = self.norm(x)
        q, k, v = (_split(t, self.heads) for t in self.qkv(h).chunk(3, dim=-1))
        return x + self.proj(_merge(F.scaled_dot_product_attention(q, k, v)))


class PreNormTakenTooLate(PreNormBlock):
    """q, k and v projected from x before the norm: the normalised x is never read."""

    BUG = "discarded-result"

    def forward(self, x):
        q, k, v = (_split(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        x = self.norm(x)  # BUG
        return self.proj(_merge(F.scaled_dot_product_attention(q, k, v)))


class ProjectionsInOneTuple(SeparateProjections):
    """The three projections bound in one statement, the values then split from the keys."""

    BUG = "discarded-result"

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        q = _split(q, self.heads)
        k = _split(k, self.heads)
        v = _split(k.transpose(1, 2).flatten(2), self.heads)  # BUG
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return self.out(_merge(scores.softmax(dim=-1) @ v))


class ConvolvedRelay(nn.Module):
    """A relay node attends over the positions of a (B, C, L, 1) map, its projections 1x1
    convolutions bound in one statement; the values are taken from the keys."""

    BUG = "discarded-result"
    INIT = {"nhid": "C", "nhead": "H", "head_dim": "d"}
    INPUTS = ["x=B,C,1,1", "y=B,C,T,1"]

    def __init__(self, nhid, nhead, head_dim):
        super().__init__()
        self.nhead, self.head_dim = nhead, head_dim
        self.WQ = nn.Conv2d(nhid, nhead * head_dim, 1)
        self.WK = nn.Conv2d(nhid, nhead * head_dim, 1)
        self.WV = nn.Conv2d(nhid, nhead * head_dim, 1)
        self.WO = nn.Conv2d(nhead * head_dim, nhid, 1)

    def forward(self, x, y):
        B, C, L, _ = y.shape
        q, k, v = self.WQ(x), self.WK(y), self.WV(y)
        q = q.view(B, self.nhead, 1, self.head_dim)
        k = k.view(B, self.nhead, self.head_dim, L)
        v = k.view(B, self.nhead, self.head_dim, L).permute(0, 1, 3, 2)  # BUG
        weights = F.softmax(torch.matmul(q, k) / self.head_dim ** 0.5, 3)
        return self.WO(torch.matmul(weights, v).view(B, -1, 1, 1))


class ConvolvedRelayCorrect(ConvolvedRelay):
    BUG = None

    def forward(self, x, y):
        B, C, L, _ = y.shape
        q, k, v = self.WQ(x), self.WK(y), self.WV(y)
        q = q.view(B, self.nhead, 1, self.head_dim)
        k = k.view(B, self.nhead, self.head_dim, L)
        v = v.view(B, self.nhead, self.head_dim, L).permute(0, 1, 3, 2)
        weights = F.softmax(torch.matmul(q, k) / self.head_dim ** 0.5, 3)
        return self.WO(torch.matmul(weights, v).view(B, -1, 1, 1))


class PositionsSwitchedOff(nn.Module):
    """Learned positions whose only use sits under a test that is never true."""

    BUG = "discarded-result"
    SEVERITY = "warning"
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads, max_len=64):
        super().__init__()
        if max_len is not None:
            self.pos_emb = nn.Embedding(max_len, width)
        else:
            self.pos_emb = None
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x):
        B, T, C = x.shape
        if self.pos_emb and False:  # BUG
            x = x + self.pos_emb(torch.arange(T))
        return self.attn(x, x, x, need_weights=False)[0]


class PositionsUsed(PositionsSwitchedOff):
    BUG = None

    def forward(self, x):
        B, T, C = x.shape
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(T))
        return self.attn(x, x, x, need_weights=False)[0]


class _GroupedHeads(nn.Module):
    """Fused projections viewed as (B, T, groups, queries per group + 2, d) and split; keys and
    values widened to the query heads only when there are fewer of them."""

    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads, groups=None):
        super().__init__()
        self.heads, self.groups = heads, groups or heads
        self.size = width // heads
        self.qkv = nn.Linear(width, (heads + 2 * self.groups) * self.size)
        self.out = nn.Linear(width, width)

    def pieces(self, x):
        batch, length, _ = x.shape
        per = self.heads // self.groups
        qkv = self.qkv(x).view(batch, length, self.groups, per + 2, self.size)
        q, k, v = qkv.split((per, 1, 1), dim=3)
        if self.heads != self.groups:
            k = k.expand(batch, length, self.groups, per, self.size)
            v = v.expand(batch, length, self.groups, per, self.size)
        return q, k, v

    def attend(self, q, k, v):
        batch, length = q.shape[:2]
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.out(y.transpose(1, 2).reshape(batch, length, -1))


class GroupedValuesKept(_GroupedHeads):
    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = self.pieces(x)
        q = q.reshape(batch, length, -1, self.size)
        k = k.reshape(batch, length, -1, self.size)
        v = v.reshape(batch, length, -1, self.size)
        return self.attend(q, k, v)


class GroupedValuesFromKeys(_GroupedHeads):
    """The values reshaped from the keys: the value projection, expanded or not, is dropped."""

    BUG = "discarded-result"

    def forward(self, x):
        batch, length, _ = x.shape
        per = self.heads // self.groups
        qkv = self.qkv(x).view(batch, length, self.groups, per + 2, self.size)
        q, k, v = qkv.split((per, 1, 1), dim=3)
        if self.heads != self.groups:
            k = k.expand(batch, length, self.groups, per, self.size)
            v = v.expand(batch, length, self.groups, per, self.size)
        q = q.reshape(batch, length, -1, self.size)
        k = k.reshape(batch, length, -1, self.size)
        v = k.reshape(batch, length, -1, self.size)  # BUG
        return self.attend(q, k, v)
