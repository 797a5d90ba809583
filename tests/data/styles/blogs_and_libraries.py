"""Blog and library styles: bmm over folded heads with the scale split between q and k, the
lecture's Head with a tril buffer, minGPT's fused c_attn with a (1, 1, L, L) bias buffer,
einops with finfo masking and default/exists helpers, and heads-last einsum with the
softmax over axis 1 (the keys in an (i, j, b, h) layout)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


class BloemSelfAttention(nn.Module):
    INIT = {"emb": "C", "heads": "H", "mask": False}
    INPUTS = ["x=B,T,C"]

    def __init__(self, emb, heads=8, mask=False):
        super().__init__()
        assert emb % heads == 0
        self.emb, self.heads, self.mask = emb, heads, mask
        self.tokeys = nn.Linear(emb, emb, bias=False)
        self.toqueries = nn.Linear(emb, emb, bias=False)
        self.tovalues = nn.Linear(emb, emb, bias=False)
        self.unifyheads = nn.Linear(emb, emb)

    def forward(self, x):
        b, t, e = x.size()
        h = self.heads
        s = e // h
        keys = self.tokeys(x).view(b, t, h, s)
        queries = self.toqueries(x).view(b, t, h, s)
        values = self.tovalues(x).view(b, t, h, s)
        keys = keys.transpose(1, 2).contiguous().view(b * h, t, s)
        queries = queries.transpose(1, 2).contiguous().view(b * h, t, s)
        values = values.transpose(1, 2).contiguous().view(b * h, t, s)
        queries = queries / (s ** (1 / 4))
        keys = keys / (s ** (1 / 4))
        dot = torch.bmm(queries, keys.transpose(1, 2))
        if self.mask:
            indices = torch.triu_indices(t, t, offset=1)
            dot[:, indices[0], indices[1]] = float("-inf")
        dot = F.softmax(dot, dim=2)
        out = torch.bmm(dot, values).view(b, h, t, s)
        out = out.transpose(1, 2).contiguous().view(b, t, s * h)
        return self.unifyheads(out)


class BloemCausalSelfAttention(BloemSelfAttention):
    INIT = {"emb": "C", "heads": "H"}

    def __init__(self, emb, heads=8, mask=True):
        super().__init__(emb, heads, mask)


class KarpathyHead(nn.Module):
    INIT = {"n_embd": "C", "head_size": "d", "block_size": 16}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        v = self.value(x)
        return wei @ v


class KarpathyMultiHead(nn.Module):
    INIT = {"n_embd": "C", "num_heads": "H", "head_size": "d", "block_size": 16}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, num_heads, head_size, block_size):
        super().__init__()
        self.heads = nn.ModuleList([KarpathyHead(n_embd, head_size, block_size)
                                    for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.proj(out)


class KarpathySingleHeadWide(nn.Module):
    """One head as wide as the model: C ** -0.5 is the head size's scale here."""

    INIT = {"n_embd": "C", "block_size": 16}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * C ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ self.value(x)


class MinGPTCausalSelfAttention(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H", "block_size": 16}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(0.0)
        self.resid_dropout = nn.Dropout(0.0)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


class LucidAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H", "dim_head": "d"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads=8, dim_head=64, dropout=0.0):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))

    def forward(self, x, context=None, mask=None):
        h = self.heads
        q = self.to_q(x)
        context = default(context, x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        if exists(mask):
            mask = rearrange(mask, "b j -> b 1 1 j")
            sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        out = rearrange(out, "b h n d -> b n (h d)", h=h)
        return self.to_out(out)


class LucidCausalAttention(LucidAttention):
    def forward(self, x):
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        i, j = sim.shape[-2:]
        causal_mask = torch.ones((i, j), dtype=torch.bool).triu(j - i + 1)
        sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class LucidCrossPadded(LucidAttention):
    INPUTS = ["x=B,T,C", "context=B,S,C", "mask=B,S:bool"]


class PrepareForMultiHeadAttention(nn.Module):
    INIT = {"d_model": "C", "heads": "H", "d_k": "d", "bias": True}
    INPUTS = ["x=T,B,C"]

    def __init__(self, d_model, heads, d_k, bias):
        super().__init__()
        self.linear = nn.Linear(d_model, heads * d_k, bias=bias)
        self.heads = heads
        self.d_k = d_k

    def forward(self, x):
        head_shape = x.shape[:-1]
        x = self.linear(x)
        return x.view(*head_shape, self.heads, self.d_k)


class LabmlMultiHeadAttention(nn.Module):
    INIT = {"heads": "H", "d_model": "C", "dropout_prob": 0.0}
    INPUTS = ["query=T,B,C", "key=T,B,C", "value=T,B,C"]

    def __init__(self, heads, d_model, dropout_prob=0.1, bias=True):
        super().__init__()
        self.d_k = d_model // heads
        self.heads = heads
        self.query = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
        self.key = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
        self.value = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=True)
        self.softmax = nn.Softmax(dim=1)
        self.output = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout_prob)
        self.scale = 1 / math.sqrt(self.d_k)
        self.attn = None

    def get_scores(self, query, key):
        return torch.einsum("ibhd,jbhd->ijbh", query, key)

    def prepare_mask(self, mask, query_shape, key_shape):
        assert mask.shape[0] == 1 or mask.shape[0] == query_shape[0]
        assert mask.shape[1] == key_shape[0]
        assert mask.shape[2] == 1 or mask.shape[2] == query_shape[1]
        return mask.unsqueeze(-1)

    def forward(self, query, key, value, mask=None):
        seq_len, batch_size, _ = query.shape
        if mask is not None:
            mask = self.prepare_mask(mask, query.shape, key.shape)
        query = self.query(query)
        key = self.key(key)
        value = self.value(value)
        scores = self.get_scores(query, key)
        scores *= self.scale
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attn = self.softmax(scores)
        attn = self.dropout(attn)
        x = torch.einsum("ijbh,jbhd->ibhd", attn, value)
        self.attn = attn.detach()
        x = x.reshape(seq_len, batch_size, -1)
        return self.output(x)


class LabmlCausal(LabmlMultiHeadAttention):
    """The labml subsequent mask: (T, T, 1) lower-triangular, broadcast over the batch."""

    INPUTS = ["x=T,B,C"]

    def forward(self, x):
        T = x.shape[0]
        mask = torch.tril(torch.ones(T, T)).to(torch.bool).unsqueeze(-1)
        return super().forward(x, x, x, mask=mask)


# --- buggy twins ------------------------------------------------------------------------------

class BloemScaledOnce(BloemSelfAttention):
    """The fourth root applied to the queries only: the scores are scaled by d ** (1/4)."""

    BUG = "attention-scale"
    INIT = {"emb": "C", "heads": "H"}

    def forward(self, x):
        b, t, e = x.size()
        h, s = self.heads, e // self.heads
        keys = self.tokeys(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        queries = self.toqueries(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        values = self.tovalues(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        dot = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(e)  # BUG
        dot = F.softmax(dot, dim=2)
        out = torch.bmm(dot, values).view(b, h, t, s).transpose(1, 2).contiguous().view(b, t, e)
        return self.unifyheads(out)


class BloemMergeWithoutTranspose(BloemSelfAttention):
    BUG = "reshape-jumble"
    INIT = {"emb": "C", "heads": "H"}

    def forward(self, x):
        b, t, e = x.size()
        h, s = self.heads, e // self.heads
        keys = self.tokeys(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        queries = self.toqueries(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        values = self.tovalues(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        dot = F.softmax(torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(s), dim=2)
        out = torch.bmm(dot, values).view(b, t, s * h)  # BUG
        return self.unifyheads(out)


class KarpathyMultiHeadScaledByC(nn.Module):
    """The lecture's early C ** -0.5 kept inside a head of a multi-head model."""

    BUG = "attention-scale"
    INIT = {"n_embd": "C", "head_size": "d", "block_size": 16}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * C ** -0.5  # BUG
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ self.value(x)


class KarpathyHeadNoMask(nn.Module):
    BUG = "causal-leak"
    INIT = {"n_embd": "C", "head_size": "d", "block_size": 16, "causal": True}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, head_size, block_size, causal=True):
        super().__init__()
        self.causal = causal
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = F.softmax(wei, dim=-1)  # BUG
        return wei @ self.value(x)


class MinGPTDiscardedMask(MinGPTCausalSelfAttention):
    BUG = "discarded-result"

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))  # BUG
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class LucidSoftmaxOverQueries(LucidAttention):
    BUG = "softmax-axis"

    def forward(self, x):
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        attn = sim.softmax(dim=-2)  # BUG
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class LabmlSoftmaxOverQueries(LabmlMultiHeadAttention):
    """Softmax over axis 0 of (i, j, b, h): over the queries, not the keys."""

    BUG = "softmax-axis"
    INPUTS = ["x=T,B,C"]

    def forward(self, x):
        seq_len, batch_size, _ = x.shape
        query, key, value = self.query(x), self.key(x), self.value(x)
        scores = self.get_scores(query, key) * self.scale
        attn = F.softmax(scores, dim=0)  # BUG
        out = torch.einsum("ijbh,jbhd->ibhd", attn, value)
        return self.output(out.reshape(seq_len, batch_size, -1))
