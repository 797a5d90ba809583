"""discarded-result, on results that are used in ways a line-pattern would miss (a masked_fill
assigned inside an ``if``, a list comprehension, a lambda's expression, ``out=``, a print or an
assert while debugging), and on results really thrown away (``x.add(y)`` as a residual, a
masked_fill inside an ``if``, a softmax on its own line, a comprehension whose list is
dropped)."""

import math

import torch
import torch.nn as nn


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head, causal=False):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_model // n_head
        self.causal = causal
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)

    def merge(self, t):
        B, _, T, _ = t.shape
        return self.o(t.transpose(1, 2).reshape(B, T, self.d_model))


class MaskInsideIf(_Heads):
    INIT = {"d_model": "C", "n_head": "H", "causal": True}

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if self.causal:
            scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class MaskInsideIfDropped(_Heads):
    BUG = "discarded-result"
    INIT = {"d_model": "C", "n_head": "H", "causal": True}

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if self.causal:
            scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))  # BUG
        return self.merge(scores.softmax(-1) @ v)


class LambdaSplitAndMask(_Heads):
    """Helpers written as lambdas: each one's expression is what it returns."""

    def forward(self, x):
        B, T, C = x.shape
        split = lambda t: t.view(B, T, self.n_head, self.d_head).transpose(1, 2)  # noqa: E731
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = lambda s: s.masked_fill(~causal, float("-inf"))  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = mask(q @ k.transpose(-2, -1) * self.d_head ** -0.5)
        return self.merge(scores.softmax(-1) @ v)


class ListOfHeadsDropped(_Heads):
    """The heads split in a comprehension whose list nobody keeps."""

    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        [t.view(B, T, self.n_head, self.d_head) for t in (q, k, v)]  # BUG
        q, k, v = (t.view(B, T, self.n_head, self.d_head).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1) * self.d_head ** -0.5).tril()
        scores = scores.masked_fill(scores == 0, float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class DebugPrintAndAssert(_Heads):
    """A student's debugging left in: the sums are read by print and by assert."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        attn = (q @ k.transpose(-2, -1) / math.sqrt(self.d_head)).softmax(dim=-1)
        assert torch.allclose(attn.sum(-1), torch.ones(B, self.n_head, T, dtype=x.dtype))
        if not self.training and T < 0:
            print(attn.sum(-1).max())
        return self.merge(attn @ v)


class OutArgument(_Heads):
    """``torch.matmul(..., out=buf)``: the result lands in ``buf``, the return value is not needed."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        scores = torch.empty(B, self.n_head, T, T, dtype=x.dtype)
        torch.matmul(q, k.transpose(-2, -1), out=scores)
        scores.mul_(self.d_head ** -0.5)
        return self.merge(scores.softmax(-1) @ v)


class ResidualAddInPlace(nn.Module):
    """Pre-norm block with ``x.add_(...)`` on its own copy and ``torch.add(..., out=)``."""

    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        h = x.clone()
        y = self.ln(h)
        h.add_(self.attn(y, y, y, need_weights=False)[0])
        return torch.add(h, self.mlp(self.ln(h)))


class ResidualAddDropped(nn.Module):
    """``x.add(y)`` read as if it were in place: the attention's output is thrown away."""

    BUG = "discarded-result"
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        y = self.ln(x)
        x.add(self.attn(y, y, y, need_weights=False)[0])  # BUG
        return x + self.mlp(self.ln(x))


class SoftmaxOnItsOwnLine(_Heads):
    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        torch.softmax(scores, dim=-1)  # BUG
        return self.merge(scores @ v)


class WalrusMask(_Heads):
    """The mask made and tested in one ``if``; the filled scores assigned in its body."""

    INPUTS = ["x=B,T,C", "attention_mask=B,T:long:2"]

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if (pad := attention_mask[:, None, None, :] == 0).any():
            scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
        return self.merge(scores.softmax(-1) @ v)


def _heads(t, h):
    b, n, _ = t.shape
    return t.reshape(b, n, h, -1).transpose(1, 2)


class MappedKeysAndValues(nn.Module):
    """Keys and values cut from one projection, every piece mapped into heads and used."""

    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.h = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def attend(self, q, k, v):
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        return self.out((w @ v).transpose(1, 2).flatten(2))

    def forward(self, x):
        k, v = self.kv(x).chunk(2, dim=-1)
        q, k, v = map(lambda t: _heads(t, self.h), (self.q(x), k, v))
        return self.attend(q, k, v)


class MappedValuesNeverUsed(MappedKeysAndValues):
    """The values are mapped into heads like the rest, then the input's heads are weighted
    instead: half of the key/value projection is computed for nothing."""

    BUG = "discarded-result"

    def forward(self, x):
        k, v = self.kv(x).chunk(2, dim=-1)  # BUG
        q, k, v, x = map(lambda t: _heads(t, self.h), (self.q(x), k, v, x))
        return self.attend(q, k, x)


class MappedValuesForTraining(MappedKeysAndValues):
    """A piece read only while training (a noisy copy of the values): in eval it is dropped
    on this run's path, not on every path, and nothing is said."""

    INPUTS = ["x=B,T,C"]

    def forward(self, x):
        k, v = self.kv(x).chunk(2, dim=-1)
        q, k, v = map(lambda t: _heads(t, self.h), (self.q(x), k, v))
        out = self.attend(q, k, k)
        if self.training:
            out = out + self.attend(q, k, v)
        return out



class SeparateProjections(nn.Module):
    """Queries, keys and values each from their own projection."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.w_q, self.w_k, self.w_v = (nn.Linear(dim, dim) for _ in range(3))
        self.w_o = nn.Linear(dim, dim)

    def split(self, t):
        B, T, C = t.shape
        return t.view(B, T, self.heads, C // self.heads).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        y = (weights @ v).transpose(1, 2).flatten(2)
        return self.w_o(y)


class KeysFromTheQueryProjection(nn.Module):
    """Copied lines: the keys taken from the query projection, the key projection unused."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]
    BUG = "discarded-result"

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.w_q = nn.Linear(dim, dim)
        self.w_k = nn.Linear(dim, dim)
        self.w_v = nn.Linear(dim, dim)
        self.w_o = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.w_q(x).view(B, T, self.heads, -1).transpose(1, 2)
        k = self.w_q(x).view(B, T, self.heads, -1).transpose(1, 2)  # BUG
        v = self.w_v(x).view(B, T, self.heads, -1).transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        return self.w_o((weights @ v).transpose(1, 2).reshape(B, T, C))


class SharedQueryKeyProjection(nn.Module):
    """One projection for queries and keys on purpose (shared-QK attention), called twice."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qk = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.to_qk(x).view(B, T, self.heads, -1).transpose(1, 2)
        k = self.to_qk(x).view(B, T, self.heads, -1).transpose(1, 2)
        v = self.to_v(x).view(B, T, self.heads, -1).transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(B, T, C)
