"""Correct attention in more styles: textbook variants, positional schemes, masks written every
way, efficient-attention approximations. Every module here must check clean (no error, no
warning). See textbook.py for INIT / INPUTS / DIMS."""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- The Annotated Transformer, its decoder with a padding mask and a subsequent mask ----------------

def _clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


def _attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class AnnotatedMaskedSelfAttention(nn.Module):
    """The Annotated Transformer's decoder self-attention: its ``subsequent_mask`` made in the
    forward, heads split with ``.view(nbatches, -1, h, d_k).transpose(1, 2)``."""

    INIT = {"h": "H", "d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, h, d_model, dropout=0.0):
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = _clones(nn.Linear(d_model, d_model), 4)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        nbatches, size = x.size(0), x.size(1)
        mask = torch.triu(torch.ones(1, size, size), diagonal=1).type(torch.uint8) == 0
        mask = mask.unsqueeze(1)
        q, k, v = [lin(t).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, t in zip(self.linears, (x, x, x))]
        y, self.attn = _attention(q, k, v, mask=mask, dropout=self.dropout)
        y = y.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del q, k, v
        return self.linears[-1](y)


# --- attention with dropout on the weights, eval-safe ------------------------------------------------

class DropoutOnWeights(nn.Module):
    """F.dropout with ``training=self.training`` on the attention weights."""

    INIT = {"d_model": "C", "n_heads": "H", "p": 0.1}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads, p=0.1):
        super().__init__()
        self.n_heads, self.p = n_heads, p
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.n_heads, -1).transpose(1, 2)
        k = k.view(B, T, self.n_heads, -1).transpose(1, 2)
        v = v.view(B, T, self.n_heads, -1).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)), dim=-1)
        w = F.dropout(w, p=self.p, training=self.training)
        y = (w @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


# --- a causal buffer built in __init__ and sliced [:T, :T]; masks written several ways --------------

class BufferCausalFinfo(nn.Module):
    """A ``tril`` buffer sliced to (T, T), ``masked_fill(~mask, finfo.min)``."""

    INIT = {"n_embd": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.scale = self.head_dim ** -0.5
        self.to_qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size, dtype=torch.bool)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.n_head, self.head_dim).permute(0, 2, 1, 3) for t in (q, k, v))
        att = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        att = att.masked_fill(~self.mask[:T, :T], torch.finfo(att.dtype).min)
        att = att.softmax(dim=-1)
        y = torch.einsum("bhij,bhjd->bhid", att, v)
        return self.proj(y.permute(0, 2, 1, 3).reshape(B, T, C))


class AdditiveFloatMask(nn.Module):
    """A float mask of 0 and -inf added to the scores, built with ``torch.full(...).triu(1)``."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.o = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        h = self.heads
        q = self.q(x).view(b, n, h, c // h).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, h, c // h).permute(2, 0, 3, 1, 4)
        bias = torch.full((n, n), float("-inf"), device=x.device).triu(1)
        scores = q @ k.transpose(-2, -1) / (c // h) ** 0.5 + bias
        out = scores.softmax(-1) @ v
        return self.o(out.transpose(1, 2).flatten(2))


class BaddbmmAttention(nn.Module):
    """Heads folded into the batch, scores with ``torch.baddbmm`` (Bloom/Megatron style) from a
    zero bias and ``alpha = 1/sqrt(d)``."""

    INIT = {"hidden": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, x):
        B, T, C = x.shape
        fused = self.qkv(x).view(B, T, self.heads, 3, self.hd)
        q, k, v = fused[..., 0, :], fused[..., 1, :], fused[..., 2, :]
        q = q.transpose(1, 2).reshape(B * self.heads, T, self.hd)
        k = k.permute(0, 2, 3, 1).reshape(B * self.heads, self.hd, T)
        v = v.transpose(1, 2).reshape(B * self.heads, T, self.hd)
        base = torch.zeros(B * self.heads, T, T, dtype=x.dtype)
        scores = torch.baddbmm(base, q, k, beta=0.0, alpha=1.0 / math.sqrt(self.hd))
        probs = F.softmax(scores, dim=-1)
        ctx = torch.bmm(probs, v).view(B, self.heads, T, self.hd)
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, T, C)
        return self.dense(ctx)


# --- ALiBi: a per-head linear bias, causal ----------------------------------------------------------

def _alibi_slopes(n):
    start = 2 ** (-8 / n)
    return torch.tensor([start ** (i + 1) for i in range(n)])


class ALiBiCausal(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.dk = d_model // n_heads
        self.wqkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.register_buffer("slopes", _alibi_slopes(n_heads))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.wqkv(x).view(B, T, 3, self.h, self.dk).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        pos = torch.arange(T)
        distance = pos[None, :] - pos[:, None]                      # (T, T): j - i
        bias = self.slopes[:, None, None] * distance[None]          # (H, T, T)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk) + bias
        causal = pos[None, :] > pos[:, None]
        scores = scores.masked_fill(causal, float("-inf"))
        y = scores.softmax(dim=-1) @ v
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


# --- rotary embeddings, two ways -----------------------------------------------------------------------

def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class RotaryRotateHalf(nn.Module):
    """GPT-NeoX / Llama rotary with ``rotate_half`` and cos/sin tables of (T, d)."""

    INIT = {"dim": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = {"d": 8}

    def __init__(self, dim, n_heads, base=10000.0):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        inv_freq = 1.0 / (base ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        t = torch.arange(T, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class RotaryComplex(nn.Module):
    """Meta's rotary: ``view_as_complex`` on (B, T, H, d/2, 2), heads second-to-last."""

    INIT = {"dim": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = {"d": 8}

    def __init__(self, dim, n_heads, max_len=64):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        freqs = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(max_len).float(), freqs)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles), persistent=False)

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        freqs = self.freqs_cis[:seqlen].view(1, seqlen, 1, self.head_dim // 2)
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        xq = torch.view_as_real(xq_ * freqs).flatten(3).type_as(xv)
        xk = torch.view_as_real(xk_ * freqs).flatten(3).type_as(xv)
        q, k, v = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, seqlen), float("-inf")).triu(1)
        scores = F.softmax((scores + mask).float(), dim=-1).type_as(q)
        out = torch.matmul(scores, v).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


# --- Shaw relative positions: a learned embedding per clipped distance ------------------------------

class ShawRelativeAttention(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads, max_rel=4):
        super().__init__()
        self.h, self.dk, self.max_rel = n_heads, d_model // n_heads, max_rel
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_rel + 1, self.dk)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, self.dk).transpose(1, 2)
        k = self.k(x).view(B, T, self.h, self.dk).transpose(1, 2)
        v = self.v(x).view(B, T, self.h, self.dk).transpose(1, 2)
        r = torch.arange(T)
        rel = (r[None, :] - r[:, None]).clamp(-self.max_rel, self.max_rel) + self.max_rel
        a_k = self.rel_k(rel)                                       # (T, T, dk)
        content = q @ k.transpose(-2, -1)
        position = torch.einsum("bhid,ijd->bhij", q, a_k)
        attn = ((content + position) / math.sqrt(self.dk)).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.o(y)


# --- sliding-window (local) causal attention ------------------------------------------------------------

class SlidingWindowAttention(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads, window=3):
        super().__init__()
        self.h, self.window = n_heads, window
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        i = torch.arange(T).unsqueeze(1)
        j = torch.arange(T).unsqueeze(0)
        allowed = (j <= i) & (j > i - self.window)
        scores = (q @ k.transpose(-2, -1)) * (C // self.h) ** -0.5
        scores = scores.masked_fill(~allowed, -1e9)
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


# --- cross-attention with T_q != T_k and a key padding mask --------------------------------------------

class CrossAttentionPadded(nn.Module):
    """Decoder queries (B, T, C) over encoder memory (B, S, C); ``src_lengths`` masks padding."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C", "memory=B,S,C", "src_lengths=B:long:S"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x, memory, src_lengths):
        B, T, C = x.shape
        S = memory.size(1)
        q = self.q(x).view(B, T, self.h, self.dk).transpose(1, 2)
        k, v = self.kv(memory).view(B, S, 2, self.h, self.dk).permute(2, 0, 3, 1, 4)
        lengths = src_lengths.clamp(min=1)
        pad = torch.arange(S)[None, :] >= lengths[:, None]          # (B, S): True at padding
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        w = scores.softmax(-1)
        return self.o((w @ v).transpose(1, 2).reshape(B, T, C))


# --- nn.MultiheadAttention, time-first and batch-first, with a key padding mask ------------------------

class TorchMHATimeFirst(nn.Module):
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=T,B,C", "lengths=B:long:T"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)

    def forward(self, x, lengths):
        T = x.size(0)
        key_padding_mask = torch.arange(T)[None, :] > lengths[:, None]
        out, _ = self.mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
        return out


class TorchMHABatchFirstCausal(nn.Module):
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        out, weights = self.mha(x, x, x, attn_mask=mask)
        return out + weights.sum() * 0


class TorchDecoderLayer(nn.Module):
    INIT = {"d_model": "C", "nhead": "H"}
    INPUTS = ["tgt=B,T,C", "memory=B,S,C"]

    def __init__(self, d_model, nhead):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=2 * d_model,
                                                dropout=0.0, batch_first=True)

    def forward(self, tgt, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.layer(tgt, memory, tgt_mask=mask, tgt_is_causal=True)


# --- multi-query attention: one key/value head for every query head ----------------------------------

class MultiQueryAttention(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * self.dk)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, self.dk).transpose(1, 2)       # (B, H, T, d)
        k, v = self.kv(x).split(self.dk, dim=-1)                         # (B, T, d) each
        k, v = k.unsqueeze(1), v.unsqueeze(1)                            # (B, 1, T, d)
        att = (q @ k.transpose(-2, -1)) * self.dk ** -0.5
        y = att.softmax(-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, C))


# --- attention pooling with a learned query (a classifier head) ------------------------------------------

class LearnedQueryPooling(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Parameter(torch.randn(1, 1, dim))
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        h, d = self.heads, C // self.heads
        q = self.query.expand(B, -1, -1).reshape(B, 1, h, d).transpose(1, 2)   # (B, H, 1, d)
        k = self.k(x).reshape(B, T, h, d).transpose(1, 2)
        v = self.v(x).reshape(B, T, h, d).transpose(1, 2)
        w = (q @ k.transpose(-1, -2) / d ** 0.5).softmax(dim=-1)               # (B, H, 1, T)
        pooled = (w @ v).reshape(B, C)
        return pooled


# --- a first lesson: self-attention without trainable weights, unscaled by design ---------------------

class SimplifiedSelfAttention(nn.Module):
    """``inputs @ inputs.T`` per sample, softmax, weighted sum: no projection, so no 1/sqrt(d)."""

    INPUTS = ["inputs=B,T,C"]

    def forward(self, inputs):
        attn_scores = inputs @ inputs.transpose(1, 2)
        attn_weights = torch.softmax(attn_scores, dim=-1)
        return attn_weights @ inputs


class ALiBiBidirectional(nn.Module):
    """An encoder with symmetric ALiBi biases, -slope * |i - j|: no mask, not causal."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.wqkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("slopes", _alibi_slopes(n_heads).view(1, n_heads, 1, 1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.wqkv(x).view(B, T, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T, dtype=x.dtype)
        bias = -self.slopes * (pos[None, :] - pos[:, None]).abs()
        scores = q @ k.transpose(-2, -1) * self.dk ** -0.5 + bias
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
