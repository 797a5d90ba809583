"""Correct attention in more styles: efficient approximations (Linformer, Performer, linear,
top-k), decoding with a cache, latents and slots, einops and einsum spellings. Every module here
must check clean (no error, no warning). See textbook.py for INIT / INPUTS / DIMS."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange, repeat


# --- Linformer: keys and values projected along the sequence axis -----------------------------------

class LinformerAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H", "seq_len": "T"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, seq_len, k=5):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.proj_k = nn.Parameter(torch.randn(seq_len, k) / math.sqrt(k))
        self.proj_v = nn.Parameter(torch.randn(seq_len, k) / math.sqrt(k))
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        h, dh = self.heads, self.dim_head
        q = self.to_q(x)
        keys = torch.einsum("bnd,nk->bkd", self.to_k(x), self.proj_k)
        values = torch.einsum("bnd,nk->bkd", self.to_v(x), self.proj_v)
        q = q.reshape(b, n, h, dh).transpose(1, 2)
        keys = keys.reshape(b, -1, h, dh).transpose(1, 2)
        values = values.reshape(b, -1, h, dh).transpose(1, 2)
        dots = torch.einsum("bhnd,bhkd->bhnk", q, keys) * dh ** -0.5
        attn = dots.softmax(dim=-1)
        out = torch.einsum("bhnk,bhkd->bhnd", attn, values)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


# --- Performer: positive random features, linear in T ---------------------------------------------------

class PerformerAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, nb_features=23):
        super().__init__()
        self.heads, self.dh = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim)
        self.register_buffer("proj", torch.randn(nb_features, self.dh))

    def _features(self, x):
        x = x * self.dh ** -0.25
        proj = torch.einsum("bhnd,md->bhnm", x, self.proj)
        sq = (x ** 2).sum(dim=-1, keepdim=True) / 2
        return torch.exp(proj - sq) / math.sqrt(self.proj.shape[0])

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        q, k = self._features(q), self._features(k)
        kv = torch.einsum("bhnm,bhnd->bhmd", k, v)
        normaliser = 1.0 / torch.einsum("bhnm,bhm->bhn", q, k.sum(dim=2))
        out = torch.einsum("bhnm,bhmd,bhn->bhnd", q, kv, normaliser)
        return self.out(rearrange(out, "b h n d -> b n (h d)"))


# --- causal linear attention: elu + 1 features, running sums --------------------------------------------

class CausalLinearElu(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, eps=1e-6):
        super().__init__()
        self.heads, self.eps = heads, eps
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).unbind(dim=2)
        q, k = F.elu(q) + 1, F.elu(k) + 1                                # (B, T, H, d)
        kv = torch.einsum("bthd,bthe->bthde", k, v).cumsum(dim=1)          # (B, T, H, d, d)
        k_sum = k.cumsum(dim=1)                                            # (B, T, H, d)
        num = torch.einsum("bthd,bthde->bthe", q, kv)
        den = torch.einsum("bthd,bthd->bth", q, k_sum).unsqueeze(-1) + self.eps
        return self.out((num / den).reshape(B, T, C))


# --- top-k sparse attention: keep the k largest scores per query ----------------------------------------

class TopKSparseAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, topk=3):
        super().__init__()
        self.heads, self.topk = heads, topk
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        top, _ = scores.topk(self.topk, dim=-1)
        threshold = top[..., -1:]
        scores = scores.masked_fill(scores < threshold, float("-inf"))
        attn = scores.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, T, C))


# --- KV-cache decoding: one new token attends to the past keys and itself ------------------------------

class CachedDecodeStep(nn.Module):
    """One decoding step: x_t (B, 1, C); the cache holds S past keys and values per head."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,1,C", "past_k=B,H,S,d", "past_v=B,H,S,d"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x, past_k, past_v):
        B, one, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, one, self.h, self.dk).transpose(1, 2)
        k = torch.cat([past_k, k.view(B, one, self.h, self.dk).transpose(1, 2)], dim=2)
        v = torch.cat([past_v, v.view(B, one, self.h, self.dk).transpose(1, 2)], dim=2)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.dk), dim=-1)
        y = (w @ v).transpose(1, 2).reshape(B, one, C)
        return self.o(y), k, v


class CachedDecodeLoop(nn.Module):
    """Greedy decoding over T steps with a growing cache, causal by construction."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        keys, values, outs = None, None, []
        for t in range(T):
            xt = x[:, t:t + 1]
            q = self.q(xt).view(B, 1, self.h, self.dk).transpose(1, 2)
            k = self.k(xt).view(B, 1, self.h, self.dk).transpose(1, 2)
            v = self.v(xt).view(B, 1, self.h, self.dk).transpose(1, 2)
            keys = k if keys is None else torch.cat((keys, k), dim=-2)
            values = v if values is None else torch.cat((values, v), dim=-2)
            att = (q @ keys.transpose(-2, -1)) / math.sqrt(self.dk)
            y = att.softmax(-1) @ values
            outs.append(y.transpose(1, 2).reshape(B, 1, C))
        return torch.cat(outs, dim=1)


# --- grouped-query attention with expand + reshape (Llama's repeat_kv written inline) -----------------

class GQAExpandReshape(nn.Module):
    INIT = {"dim": "C", "n_heads": "H", "n_kv_heads": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = {"H": 6}

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.h, self.kvh, self.hd = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * n_kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        rep = self.h // self.kvh
        q = self.wq(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k, v = self.wkv(x).view(B, T, 2, self.kvh, self.hd).permute(2, 0, 3, 1, 4)
        k = k[:, :, None].expand(B, self.kvh, rep, T, self.hd).reshape(B, self.h, T, self.hd)
        v = repeat(v, "b g t d -> b (g r) t d", r=rep)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


# --- Perceiver: a learned latent array cross-attends to the inputs ------------------------------------

class PerceiverLatents(nn.Module):
    INIT = {"dim": "C", "n_latents": "S", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, n_latents, heads):
        super().__init__()
        self.heads = heads
        self.latents = nn.Parameter(torch.randn(n_latents, dim))
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b = x.shape[0]
        lat = repeat(self.latents, "n d -> b n d", b=b)
        q = self.to_q(lat)
        k, v = self.to_kv(self.norm(x)).chunk(2, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=self.heads) for t in (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * (q.shape[-1] ** -0.5)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        out = rearrange(out, "(b h) n d -> b n (h d)", h=self.heads)
        return self.to_out(out) + lat


# --- Slot Attention: softmax over the slots, then a weighted mean over the inputs ----------------------

class SlotAttentionIterative(nn.Module):
    INIT = {"dim": "C", "num_slots": 3}
    INPUTS = ["inputs=B,T,C"]

    def __init__(self, dim, num_slots, iters=2, eps=1e-8):
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim ** -0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.gru = nn.GRUCell(dim, dim)
        self.norm_inputs = nn.LayerNorm(dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        slots = self.slots_mu.expand(b, self.num_slots, -1)
        inputs = self.norm_inputs(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            q = self.to_q(slots)
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale      # (b, slots, n)
            attn = dots.softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), slots.reshape(-1, d)).reshape(b, -1, d)
        return slots


# --- d2l: masked_softmax with 2-D valid lengths (one length per query) ----------------------------------

def _sequence_mask(X, valid_len, value=0.0):
    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def _masked_softmax(X, valid_lens):
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return F.softmax(X.reshape(shape), dim=-1)


class D2LCausalValidLens(nn.Module):
    """d2l's decoder self-attention in training: ``dec_valid_lens = arange(1, T + 1).repeat(B, 1)``,
    heads as ``(B*H, T, d)`` with ``transpose_qkv``."""

    INIT = {"num_hiddens": "C", "num_heads": "H"}
    INPUTS = ["X=B,T,C"]

    def __init__(self, num_hiddens, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)

    def _split(self, X):
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1).permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def _merge(self, X):
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2]).permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)

    def forward(self, X):
        batch_size, num_steps, _ = X.shape
        dec_valid_lens = torch.arange(1, num_steps + 1).repeat(batch_size, 1)
        q, k, v = self._split(self.W_q(X)), self._split(self.W_k(X)), self._split(self.W_v(X))
        valid_lens = torch.repeat_interleave(dec_valid_lens, repeats=self.num_heads, dim=0)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        attn = _masked_softmax(scores, valid_lens)
        return self.W_o(self._merge(torch.bmm(attn, v)))


# --- einops all the way, heads packed into the batch ---------------------------------------------------

class EinopsPackedHeads(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C", "context=B,S,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, dim * 2, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context):
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> (b h) n d", h=h), (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        out = rearrange(out, "(b h) n d -> b n (h d)", h=h)
        return self.to_out(out)


# --- T5 relative position buckets with log, clamped, and no scaling -------------------------------------

class T5BucketsBidirectional(nn.Module):
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]
    #: T5 folds the scale into its initialisation: the rule can only warn that nothing is scaled
    #: (the one warning SPEC section 3 asks for on projected q and k).
    ALLOWED = {"attention-scale": "not scaled"}

    def __init__(self, d_model, n_heads, num_buckets=8, max_distance=16):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        self.rel = nn.Embedding(num_buckets, n_heads)

    def _bucket(self, relative_position):
        num_buckets = self.num_buckets // 2
        buckets = (relative_position > 0).long() * num_buckets
        n = relative_position.abs()
        max_exact = num_buckets // 2
        is_small = n < max_exact
        large = max_exact + (torch.log(n.float() / max_exact) / math.log(self.max_distance / max_exact)
                             * (num_buckets - max_exact)).long()
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return buckets + torch.where(is_small, n, large)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, -1, self.h, self.dk).transpose(1, 2)
        k = self.k(x).view(B, -1, self.h, self.dk).transpose(1, 2)
        v = self.v(x).view(B, -1, self.h, self.dk).transpose(1, 2)
        ctx = torch.arange(T)[:, None]
        mem = torch.arange(T)[None, :]
        bias = self.rel(self._bucket(mem - ctx)).permute(2, 0, 1).unsqueeze(0)
        scores = torch.matmul(q, k.transpose(3, 2)) + bias
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        return self.o(torch.matmul(w, v).transpose(1, 2).contiguous().view(B, -1, C))
