"""Buggy twins of the styles in variants.py and efficient.py: each names its rule in
``BUG`` and marks the line where it must be found with ``# BUG``. tests/test_style_corpus.py
checks them (behaviour rules with the behaviour checks on)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


def _clones(module, n):
    import copy

    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


# --- the Annotated Transformer ------------------------------------------------------------------------

class AnnotatedHeadsFirstView(nn.Module):
    """Heads split with ``.view(nbatches, h, -1, d_k)``: no transpose, tokens dealt to heads."""

    BUG = "reshape-jumble"
    INIT = {"h": "H", "d_model": "C"}
    INPUTS = ["query=B,T,C", "key=B,T,C", "value=B,T,C"]

    def __init__(self, h, d_model):
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = _clones(nn.Linear(d_model, d_model), 4)

    def forward(self, query, key, value):
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, self.h, -1, self.d_k)  # BUG
            for lin, x in zip(self.linears, (query, key, value))
        ]
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(self.d_k)
        x = torch.matmul(scores.softmax(dim=-1), value)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


class AnnotatedMergeWithoutTranspose(nn.Module):
    BUG = "reshape-jumble"
    INIT = {"h": "H", "d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, h, d_model):
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = _clones(nn.Linear(d_model, d_model), 4)

    def forward(self, x):
        nbatches = x.size(0)
        q, k, v = [lin(t).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, t in zip(self.linears, (x, x, x))]
        p_attn = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1)
        y = torch.matmul(p_attn, v)
        y = y.contiguous().view(nbatches, -1, self.h * self.d_k)  # BUG
        return self.linears[-1](y)


class AnnotatedDiscardedMask(nn.Module):
    """``scores.masked_fill(mask == 0, -1e9)`` with its result dropped: the mask does nothing."""

    BUG = "discarded-result"
    INIT = {"h": "H", "d_model": "C"}
    INPUTS = ["x=B,T,C", "mask=B,T,T:bool"]

    def __init__(self, h, d_model):
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = _clones(nn.Linear(d_model, d_model), 4)

    def forward(self, x, mask):
        B = x.size(0)
        q, k, v = [lin(t).view(B, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, t in zip(self.linears, (x, x, x))]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)  # BUG
        y = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.linears[-1](y.transpose(1, 2).reshape(B, -1, self.h * self.d_k))


# --- softmax over the wrong axis -------------------------------------------------------------------------

class EinsumSoftmaxOverQueries(nn.Module):
    BUG = "softmax-axis"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        dots = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
        attn = dots.softmax(dim=-2)  # BUG
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return rearrange(out, "b h n d -> b n (h d)")


class SoftmaxOverHeads(nn.Module):
    BUG = "softmax-axis"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        attn = F.softmax(attn, dim=1)  # BUG
        return (attn @ v).transpose(1, 2).reshape(B, N, C)


class EinsumContractsQueries(nn.Module):
    """Softmax over the keys j, but the values are summed over the queries i."""

    BUG = "softmax-axis"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        attn = (torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5).softmax(dim=-1)
        out = torch.einsum("bhij,bhid->bhjd", attn, v)  # BUG
        return rearrange(out, "b h n d -> b n (h d)")


class PerceiverSoftmaxOverLatents(nn.Module):
    BUG = "softmax-axis"
    INIT = {"dim": "C", "n_latents": "S"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, n_latents):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(n_latents, dim))
        self.to_q = nn.Linear(dim, dim)
        self.to_kv = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        q = self.to_q(self.latents).expand(x.shape[0], -1, -1)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        sim = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(q.shape[-1])
        attn = sim.softmax(dim=1)  # BUG
        return torch.einsum("bij,bjd->bid", attn, v)


# --- the scale ---------------------------------------------------------------------------------------------

class FairseqScaledByModelWidth(nn.Module):
    BUG = "attention-scale"
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["query=T,B,C"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.scaling = embed_dim ** -0.5  # BUG
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)

    def forward(self, query):
        tgt_len, bsz, embed_dim = query.size()
        q, k, v = self.in_proj(query).chunk(3, dim=-1)
        q = q * self.scaling
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        attn = torch.bmm(F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1), v)
        return attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)


class BaddbmmSqrtC(nn.Module):
    BUG = "attention-scale"
    INIT = {"hidden": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.hd, self.hidden = heads, hidden // heads, hidden
        self.qkv = nn.Linear(hidden, 3 * hidden)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q = q.reshape(B * self.heads, T, self.hd)
        k = k.reshape(B * self.heads, T, self.hd)
        v = v.reshape(B * self.heads, T, self.hd)
        base = torch.zeros(B * self.heads, T, T)
        scores = torch.baddbmm(base, q, k.transpose(1, 2), beta=0.0, alpha=1 / math.sqrt(self.hidden))  # BUG
        ctx = torch.bmm(scores.softmax(-1), v).view(B, self.heads, T, self.hd)
        return ctx.permute(0, 2, 1, 3).reshape(B, T, C)


# --- causal intent without a mask, and masks that do not hold --------------------------------------------

class CausalSelfAttentionNoMask(nn.Module):
    """Named causal, but the mask was forgotten."""

    BUG = "causal-leak"
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=-1)  # BUG
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class SlidingWindowInverted(nn.Module):
    """The window mask applied the wrong way round: the allowed keys are the ones masked out."""

    BUG = "causal-leak"
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads, window=3):
        super().__init__()
        self.h, self.window = n_heads, window
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        i = torch.arange(T).unsqueeze(1)
        j = torch.arange(T).unsqueeze(0)
        outside = (j > i) | (j <= i - self.window)
        scores = (q @ k.transpose(-2, -1)) * (C // self.h) ** -0.5
        scores = scores.masked_fill(~outside, -1e9)  # BUG
        y = torch.softmax(scores, dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)


class CausalLinearGlobalNormaliser(nn.Module):
    """Causal linear attention whose normaliser sums the keys of the whole sequence."""

    BUG = "causal-leak"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).unbind(dim=2)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("bthd,bthe->bthde", k, v).cumsum(dim=1)
        k_sum = k.sum(dim=1, keepdim=True)  # BUG
        num = torch.einsum("bthd,bthde->bthe", q, kv)
        den = (q * k_sum).sum(-1, keepdim=True)
        return (num / den).reshape(B, T, C)


class CausalDecoderNoTgtMask(nn.Module):
    """nn.TransformerDecoderLayer in a causal class, called without its tgt_mask."""

    BUG = "causal-leak"
    INIT = {"d_model": "C", "nhead": "H"}
    INPUTS = ["tgt=B,T,C", "memory=B,S,C"]

    def __init__(self, d_model, nhead):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=2 * d_model,
                                                dropout=0.0, batch_first=True)

    def forward(self, tgt, memory):
        return self.layer(tgt, memory)  # BUG


class GPTStyleSDPANotCausal(nn.Module):
    BUG = "causal-leak"
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).view(B, T, 3, self.n_head, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=False)  # BUG
        return y.transpose(1, 2).reshape(B, T, C)


class TriuBufferKeepsFuture(nn.Module):
    """A causal flag, a buffer made with triu where tril was meant: every query sees the future."""

    BUG = "causal-leak"
    INIT = {"n_embd": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head, block_size, causal=True):
        super().__init__()
        self.n_head, self.causal = n_head, causal
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.register_buffer("bias", torch.triu(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, -1).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        att = att.masked_fill(self.bias[:T, :T] == 0, float("-inf"))  # BUG
        y = att.softmax(dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)


# --- samples that see each other ----------------------------------------------------------------------------

class D2LValidLensRepeat(nn.Module):
    """d2l's valid_lens repeated with ``.repeat`` (tiled over the batch) where each sample's
    length must be repeated per head: head h of sample b gets the length of another sample."""

    BUG = "batch-leak"
    INIT = {"num_hiddens": "C", "num_heads": "H"}
    INPUTS = ["X=B,T,C", "valid_lens=B:long:T"]

    def __init__(self, num_hiddens, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_qkv = nn.Linear(num_hiddens, 3 * num_hiddens, bias=False)

    def forward(self, X, valid_lens):
        B, T, C = X.shape
        q, k, v = self.W_qkv(X).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.num_heads, -1).permute(0, 2, 1, 3).reshape(B * self.num_heads, T, -1)
                   for t in (q, k, v))
        lens = valid_lens.clamp(min=1).repeat(self.num_heads)  # BUG
        keep = torch.arange(T)[None, None, :] < lens[:, None, None]
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~keep, -1e6)
        out = torch.bmm(scores.softmax(dim=-1), v)
        return out.reshape(B, self.num_heads, T, -1).permute(0, 2, 1, 3).reshape(B, T, C)


class TorchMHABatchFirstForgotten(nn.Module):
    """(B, T, C) fed to nn.MultiheadAttention built time-first: it attends across the batch."""

    BUG = "batch-leak"
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)  # BUG

    def forward(self, x):
        out, _ = self.mha(x, x, x, need_weights=False)
        return out


class PaddingMaskOfAnotherSample(nn.Module):
    """Cross-attention whose padding mask is flipped over the batch."""

    BUG = "batch-leak"
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C", "memory=B,S,C", "src_lengths=B:long:S"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x, memory, src_lengths):
        B, T, C = x.shape
        S = memory.size(1)
        q = self.q(x).view(B, T, self.h, self.dk).transpose(1, 2)
        k, v = self.kv(memory).view(B, S, 2, self.h, self.dk).permute(2, 0, 3, 1, 4)
        lengths = src_lengths.clamp(min=1).flip(0)
        pad = torch.arange(S)[None, :] >= lengths[:, None]  # BUG
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class KeyNormOverBatch(nn.Module):
    """Keys standardised with statistics over the batch axis."""

    BUG = "batch-leak"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        k = (k - k.mean(dim=0)) / (k.std(dim=0) + 1e-5)  # BUG
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        return w @ x


# --- dropout left on in eval ---------------------------------------------------------------------------------

class DropoutAlwaysOn(nn.Module):
    BUG = "nondeterministic-eval"
    INIT = {"d_model": "C", "n_heads": "H", "p": 0.1}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads, p=0.1):
        super().__init__()
        self.n_heads, self.p = n_heads, p
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)), dim=-1)
        w = F.dropout(w, p=self.p)  # BUG
        return (w @ v).transpose(1, 2).reshape(B, T, C)


# --- the weights no longer sum to one ----------------------------------------------------------------------

class SlotRenormalisedOverSlots(nn.Module):
    """Slot Attention whose weighted mean divides by the sum over the slots (already 1), so the
    weights contracted over the inputs are normalised over the slots only."""

    BUG = "softmax-axis"
    INIT = {"dim": "C", "num_slots": 3}
    INPUTS = ["inputs=B,T,C"]

    def __init__(self, dim, num_slots):
        super().__init__()
        self.slots = nn.Parameter(torch.randn(1, num_slots, dim))
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        q = self.to_q(self.slots).expand(b, -1, -1)
        k, v = self.to_k(inputs), self.to_v(inputs)
        attn = (torch.einsum("bid,bjd->bij", q, k) * d ** -0.5).softmax(dim=1) + 1e-8  # BUG
        attn = attn / attn.sum(dim=1, keepdim=True)
        return torch.einsum("bjd,bij->bid", v, attn)


class SlotRenormalisedByMean(SlotRenormalisedOverSlots):
    """Slot Attention whose weighted mean over the inputs divides by the mean, not the sum: the
    weights contracted over the inputs sum to their number."""

    BUG = "unnormalized-attention"

    def forward(self, inputs):
        b, n, d = inputs.shape
        q = self.to_q(self.slots).expand(b, -1, -1)
        k, v = self.to_k(inputs), self.to_v(inputs)
        attn = (torch.einsum("bid,bjd->bij", q, k) * d ** -0.5).softmax(dim=1) + 1e-8
        attn = attn / attn.mean(dim=-1, keepdim=True)  # BUG
        return torch.einsum("bjd,bij->bid", v, attn)


class TopKMaskAfterSoftmax(nn.Module):
    """Top-k selection applied to the probabilities, which are then used unrenormalised."""

    BUG = "unnormalized-attention"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, topk=3):
        super().__init__()
        self.heads, self.topk = heads, topk
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        top, _ = attn.topk(self.topk, dim=-1)
        attn = attn.masked_fill(attn < top[..., -1:], 0.0)  # BUG
        return (attn @ v).transpose(1, 2).reshape(B, T, C)


# --- a padded sequence read back with its axes swapped ------------------------------------------------------

class PaddedSequenceSwapped(nn.Module):
    """A start token padded in front, then (B, T + 1, C) viewed as (B, C, T + 1) for a Conv1d."""

    BUG = "reshape-jumble"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, 2)

    def forward(self, x):
        B, T, C = x.shape
        padded = F.pad(x, (0, 0, 1, 0))
        h = padded.reshape(B, C, T + 1)  # BUG
        return self.conv(h).transpose(1, 2)


class RecodedMaskNeverAdded(nn.Module):
    """An additive causal mask built in place (``mask[mask == 0] = -inf``), then forgotten."""

    BUG = "causal-leak"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        mask = torch.tril(torch.ones(T, T))
        mask[mask == 0] = float("-inf")
        mask[mask == 1] = 0.0
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        w = scores.softmax(dim=-1)  # BUG
        return (w @ v).transpose(1, 2).reshape(B, T, C)


# --- more twins: timm, d2l, KV cache, grouped heads, ALiBi, einops ----------------------------------------

class TimmMergeWithoutTranspose(nn.Module):
    BUG = "reshape-jumble"
    INIT = {"dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return (attn @ v).reshape(B, N, C)  # BUG


class D2LTransposeOutputForgotten(nn.Module):
    BUG = "reshape-jumble"
    INIT = {"num_hiddens": "C", "num_heads": "H"}
    INPUTS = ["X=B,T,C"]

    def __init__(self, num_hiddens, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_qkv = nn.Linear(num_hiddens, 3 * num_hiddens, bias=False)

    def forward(self, X):
        B, T, C = X.shape
        q, k, v = self.W_qkv(X).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.num_heads, -1).permute(0, 2, 1, 3).reshape(B * self.num_heads, T, -1)
                   for t in (q, k, v))
        out = torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1]), dim=-1), v)
        return out.reshape(B, T, -1)  # BUG


class KVCacheConcatOverHeads(nn.Module):
    """The new key appended along the heads axis instead of the time axis."""

    BUG = "op-failed"
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,1,C", "past_k=B,H,S,d", "past_v=B,H,S,d"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, past_k, past_v):
        B, one, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, one, self.h, self.dk).transpose(1, 2)
        k = torch.cat([past_k, k.view(B, one, self.h, self.dk).transpose(1, 2)], dim=1)  # BUG
        v = torch.cat([past_v, v.view(B, one, self.h, self.dk).transpose(1, 2)], dim=2)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.dk), dim=-1)
        return (w @ v).transpose(1, 2).reshape(B, one, C)


class GQATiledExpand(nn.Module):
    """Key/value heads tiled with expand on the wrong side of the group axis."""

    BUG = "head-grouping"
    INIT = {"dim": "C", "n_heads": "H", "n_kv_heads": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = {"H": 6}

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.h, self.kvh, self.hd = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * n_kv_heads * self.hd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        rep = self.h // self.kvh
        q = self.wq(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k, v = self.wkv(x).view(B, T, 2, self.kvh, self.hd).permute(2, 0, 3, 1, 4)
        k = k[:, None].expand(B, rep, self.kvh, T, self.hd).reshape(B, self.h, T, self.hd)  # BUG
        v = v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


class ALiBiCausalMaskForgotten(nn.Module):
    """ALiBi biases, but the causal mask of a causal model was left out."""

    BUG = "causal-leak"
    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.wqkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.register_buffer("slopes", torch.tensor([2 ** (-8 * (i + 1) / n_heads) for i in range(n_heads)]))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.wqkv(x).view(B, T, 3, self.h, self.dk).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        pos = torch.arange(T)
        bias = self.slopes[:, None, None] * (pos[None, :] - pos[:, None])[None]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk) + bias
        y = scores.softmax(dim=-1) @ v  # BUG
        return y.transpose(1, 2).reshape(B, T, C)


class CausalFlagMaskSkipped(nn.Module):
    """``causal=True`` given, but the mask is only applied when a mask argument comes in."""

    BUG = "causal-leak"
    INIT = {"dim": "C", "heads": "H", "causal": True}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, causal=False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
        if mask is not None:
            sim = sim.masked_fill(~mask, float("-inf"))
        attn = sim.softmax(dim=-1)  # BUG
        return rearrange(torch.einsum("bhij,bhjd->bhid", attn, v), "b h n d -> b n (h d)")


class DiscardedMaskFillMultiline(nn.Module):
    """A masked_fill over several lines whose result is dropped."""

    BUG = "discarded-result"
    INIT = {"dim": "C", "heads": "H", "block_size": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, block_size):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        wei = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        wei.masked_fill(  # BUG
            self.tril[:T, :T] == 0,
            float("-inf"),
        )
        wei = F.softmax(wei, dim=-1)
        return (wei @ v).transpose(1, 2).reshape(B, T, C)


class ScaleAfterSoftmax(nn.Module):
    BUG = "unnormalized-attention"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        attn = attn / math.sqrt(q.shape[-1])  # BUG
        return (attn @ v).transpose(1, 2).reshape(B, T, C)


class FullyMaskedRows(nn.Module):
    """A padding mask on the queries too, with -inf: padded queries' rows are all -inf."""

    BUG = "non-finite"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "lengths=B:long:T"]

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, lengths):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        real = torch.arange(T)[None, :] < lengths.clamp(max=T - 2)[:, None]
        pair = real[:, :, None] & real[:, None, :]
        scores = (q @ k.transpose(1, 2) / math.sqrt(C)).masked_fill(~pair, float("-inf"))
        w = scores.softmax(dim=-1)  # BUG
        return w @ v
