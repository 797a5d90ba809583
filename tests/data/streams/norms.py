"""Self-attention whose projections read the stream on both sides of its norm (norm-bypassed),
and attentions whose projections read different tensors by design. Each buggy module marks the
line the finding must point at with ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _heads(t, n_head):
    B, T, C = t.shape
    return t.view(B, T, n_head, C // n_head).transpose(1, 2)


def _attend(q, k, v):
    weights = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return (weights @ v).transpose(1, 2).flatten(2)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class PreNormBlock(nn.Module):
    """Fused projection of the normalised stream: one tensor for q, k and v."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.norm = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(self.norm(x)).chunk(3, dim=-1))
        return x + self.out(_attend(q, k, v))


class KeysFromRawStream(nn.Module):
    """The user's own RMSNorm on the queries' side; keys and values from x itself."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.norm = RMSNorm(n_embd)
        self.wq = nn.Linear(n_embd, n_embd, bias=False)
        self.wk = nn.Linear(n_embd, n_embd, bias=False)
        self.wv = nn.Linear(n_embd, n_embd, bias=False)
        self.wo = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        h = self.norm(x)
        q = _heads(self.wq(h), self.n_head)
        k = _heads(self.wk(x), self.n_head)  # BUG
        v = _heads(self.wv(x), self.n_head)
        return x + self.wo(_attend(q, k, v))


class KeysFromNormedStream(KeysFromRawStream):
    def forward(self, x):
        h = self.norm(x)
        q, k, v = (_heads(w(h), self.n_head) for w in (self.wq, self.wk, self.wv))
        return x + self.wo(_attend(q, k, v))


class QueriesFromRawStream(KeysFromRawStream):
    """The other way round: the norm taken for keys and values only."""

    def forward(self, x):
        h = self.norm(x)
        q = _heads(self.wq(x), self.n_head)  # BUG
        k, v = _heads(self.wk(h), self.n_head), _heads(self.wv(h), self.n_head)
        return x + self.wo(_attend(q, k, v))


class PositionsOnQueriesAndKeys(nn.Module):
    """DETR's encoder: positions added to the queries' and keys' input, not the values'."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.wq, self.wk, self.wv = (nn.Linear(n_embd, n_embd) for _ in range(3))
        self.norm = nn.LayerNorm(n_embd)

    def forward(self, x, pos):
        qk = x + pos
        q, k = _heads(self.wq(qk), self.n_head), _heads(self.wk(qk), self.n_head)
        v = _heads(self.wv(x), self.n_head)
        return self.norm(x + _attend(q, k, v))


class CrossAttention(nn.Module):
    """Queries from the normalised stream, keys and values from an encoder's output."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.norm = nn.LayerNorm(n_embd)
        self.wq = nn.Linear(n_embd, n_embd)
        self.wkv = nn.Linear(n_embd, 2 * n_embd)

    def forward(self, x, memory):
        q = _heads(self.wq(self.norm(x)), self.n_head)
        k, v = (_heads(t, self.n_head) for t in self.wkv(memory).chunk(2, dim=-1))
        return x + _attend(q, k, v)


class SeparateNorms(nn.Module):
    """A norm of its own for the queries and for the keys and values, both of x."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.norm_q, self.norm_kv = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.wq = nn.Linear(n_embd, n_embd)
        self.wkv = nn.Linear(n_embd, 2 * n_embd)

    def forward(self, x):
        q = _heads(self.wq(self.norm_q(x)), self.n_head)
        k, v = (_heads(t, self.n_head) for t in self.wkv(self.norm_kv(x)).chunk(2, dim=-1))
        return x + _attend(q, k, v)


class PostNorm(nn.Module):
    """The norm after the residual: q, k and v all read x."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.norm = nn.LayerNorm(n_embd)

    def forward(self, x):
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1))
        return self.norm(x + _attend(q, k, v))


def _either(value, fallback):
    return value if value is not None else fallback


class DefaultContextBeforeNorm(nn.Module):
    """The context defaults to x before x is normalised; a context that is given gets a norm of
    its own in a branch the default never takes."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.norm, self.norm_context = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.to_q = nn.Linear(n_embd, n_embd, bias=False)
        self.to_kv = nn.Linear(n_embd, 2 * n_embd, bias=False)

    def forward(self, x, context=None):
        given = context is not None
        context = _either(context, x)  # BUG
        x = self.norm(x)
        if given:
            context = self.norm_context(context)
        q = _heads(self.to_q(x), self.n_head)
        k, v = (_heads(t, self.n_head) for t in self.to_kv(context).chunk(2, dim=-1))
        return _attend(q, k, v)


class DefaultContextAfterNorm(DefaultContextBeforeNorm):
    def forward(self, x, context=None):
        given = context is not None
        x = self.norm(x)
        context = _either(context, x)
        if given:
            context = self.norm_context(context)
        q = _heads(self.to_q(x), self.n_head)
        k, v = (_heads(t, self.n_head) for t in self.to_kv(context).chunk(2, dim=-1))
        return _attend(q, k, v)


class KeyedAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.wq, self.wk, self.wv = (nn.Linear(n_embd, n_embd) for _ in range(3))

    def forward(self, query, key, value):
        q = _heads(self.wq(query), self.n_head)
        k, v = _heads(self.wk(key), self.n_head), _heads(self.wv(value), self.n_head)
        return _attend(q, k, v)


class QueryNormedBlock(nn.Module):
    """A block built for attending to a memory: it normalises its query argument and hands the
    keys and values on as they were given."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.norm = nn.LayerNorm(n_embd)
        self.attention = KeyedAttention(n_embd, n_head)

    def forward(self, query, key, value):
        return query + self.attention(self.norm(query), key, value)


class SelfAttendingStack(nn.Module):
    """The same block used for self-attention: its caller passes x for all three."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.block = QueryNormedBlock(n_embd, n_head)

    def forward(self, x):
        return self.block(x, x, x)
