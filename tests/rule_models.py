"""A zoo of attention modules for the trace rules: correct styles that must stay quiet, and bugs.

Every module is built as ``Model(n_embd, n_head)`` (plus keyword arguments a test may pass) and
called with the inputs its ``INPUTS`` names: ``x`` (B, T, C), ``context`` (B, S, C), ``target``
(B,). In each buggy module the line where shapetrace must locate the bug ends with ``# BUG``.
"""

from __future__ import annotations

import math

import einops
import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def split_heads(x: Float[Tensor, "B T C"], n_head: int) -> Float[Tensor, "B H T d"]:
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)


def merge_heads(y: Float[Tensor, "B H T d"]) -> Float[Tensor, "B T C"]:
    B, H, T, d = y.shape
    return y.transpose(1, 2).reshape(B, T, H * d)


class Attention(nn.Module):
    """Separate q, k, v projections; subclasses override the piece they get wrong."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int, block_size: int = 64):
        super().__init__()
        self.n_head = n_head
        self.head_size = n_embd // n_head
        self.q_proj = nn.Linear(n_embd, n_embd)
        self.k_proj = nn.Linear(n_embd, n_embd)
        self.v_proj = nn.Linear(n_embd, n_embd)
        self.out_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def heads(self, x):
        return (split_heads(self.q_proj(x), self.n_head), split_heads(self.k_proj(x), self.n_head),
                split_heads(self.v_proj(x), self.n_head))

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        att = F.softmax(scores, dim=-1)
        return self.out_proj(merge_heads(att @ v))


# --------------------------------------------------------------------------------------------
# Correct styles
# --------------------------------------------------------------------------------------------


class SeparateProjections(Attention):
    """Three Linear layers, view + transpose, a tril buffer and masked_fill with -inf."""


class FusedQKVPermute(nn.Module):
    """One Linear for q, k and v; heads split with a five-axis permute."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class PrescaledQuery(Attention):
    """The 1/sqrt(d) applied to q before the product, as nn.MultiheadAttention does."""

    def forward(self, x):
        q, k, v = self.heads(x)
        q = q * self.head_size ** -0.5
        att = F.softmax(q @ k.transpose(-2, -1), dim=-1)
        return self.out_proj(merge_heads(att @ v))


class EinsumAttention(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.head_size ** -0.5
        att = scores.softmax(dim=-1)
        return self.out_proj(merge_heads(torch.einsum("bhqk,bhkd->bhqd", att, v)))


class EinopsAttention(Attention):
    def forward(self, x):
        q, k, v = (einops.rearrange(p(x), "b t (h d) -> b h t d", h=self.n_head)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        att = torch.softmax(q @ k.mT / math.sqrt(q.shape[-1]), dim=-1)
        return self.out_proj(einops.rearrange(att @ v, "b h t d -> b t (h d)"))


class SDPACausal(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        return self.out_proj(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))


class SDPAMask(Attention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        mask = self.tril[:T, :T].bool()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1 / math.sqrt(self.head_size))
        return self.out_proj(merge_heads(y))


class GroupedQuery(nn.Module):
    """Grouped-query attention: n_kv_head key/value heads shared by groups of query heads."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int, n_kv_head: int = 2):
        super().__init__()
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.head_size = n_embd // n_head
        self.q_proj = nn.Linear(n_embd, n_embd)
        self.kv_proj = nn.Linear(n_embd, 2 * n_kv_head * self.head_size)
        self.out_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q = split_heads(self.q_proj(x), self.n_head)
        k, v = self.kv_proj(x).view(B, T, 2, self.n_kv_head, self.head_size).permute(2, 0, 3, 1, 4)
        groups = self.n_head // self.n_kv_head
        k = k.repeat_interleave(groups, dim=1)
        v = v[:, :, None].expand(B, self.n_kv_head, groups, T, self.head_size).reshape(B, self.n_head, T, self.head_size)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        return self.out_proj(merge_heads(att @ v))


class MultiQuery(nn.Module):
    """Multi-query attention: one key/value head of shape (B, 1, T, d), broadcast over the heads."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.head_size = n_embd // n_head
        self.q_proj = nn.Linear(n_embd, n_embd)
        self.kv_proj = nn.Linear(n_embd, 2 * self.head_size)
        self.out_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        q = split_heads(self.q_proj(x), self.n_head)
        k, v = self.kv_proj(x).unsqueeze(1).split(self.head_size, dim=-1)
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.head_size)).softmax(dim=-1)
        return self.out_proj(merge_heads(att @ v))


class CrossAttention(Attention):
    INPUTS = ("x", "context")

    def forward(self, x, context):
        q = split_heads(self.q_proj(x), self.n_head)
        k = split_heads(self.k_proj(context), self.n_head)
        v = split_heads(self.v_proj(context), self.n_head)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        return self.out_proj(merge_heads(att @ v))


class ALiBi(Attention):
    """Linear biases: slopes (H, 1, 1) times relative positions (T, T), added to the scores."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        slopes = torch.tensor([2 ** (-8 * (i + 1) / n_head) for i in range(n_head)])
        self.register_buffer("slopes", slopes[:, None, None])

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        pos = torch.arange(T, device=x.device, dtype=torch.float32)
        distance = pos[None, :] - pos[:, None]
        bias = self.slopes * distance
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size) + bias
        causal = torch.arange(T)[:, None] >= torch.arange(T)[None, :]
        att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return self.out_proj(merge_heads(att @ v))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(Attention):
    """Rotary position embeddings: cos/sin tables (T, d) applied to q and k (needs an even d)."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_size, 2).float() / self.head_size))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        t = torch.arange(T, dtype=torch.float32)
        freqs = t[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(merge_heads(y))


class FinfoMinMask(Attention):
    """An additive float mask: 0 where allowed, the dtype's most negative number elsewhere."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        mask = torch.zeros(T, T).masked_fill(self.tril[:T, :T] == 0, torch.finfo(scores.dtype).min)
        att = F.softmax(scores + mask, dim=-1)
        return self.out_proj(merge_heads(att @ v))


class TriuInfMask(Attention):
    """An additive mask of -inf above the diagonal, made with full() and triu()."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        mask = torch.full((T, T), float("-inf")).triu(diagonal=1)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size) + mask, dim=-1)
        return self.out_proj(merge_heads(att @ v))


class InplaceMaskedFill(Attention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores.masked_fill_(self.tril[:T, :T] == 0, float("-inf"))
        att = F.softmax(scores, dim=-1)
        return self.out_proj(merge_heads(att @ v))


class RenormalisedMask(Attention):
    """Mask after the softmax, then renormalise: the weights sum to 1 again."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        att = att.masked_fill(self.tril[:T, :T] == 0, 0.0)
        att = att / att.sum(dim=-1, keepdim=True)
        return self.out_proj(merge_heads(att @ v))


class TrainingDropout(Attention):
    """Dropout on the weights in training mode rescales them; that is not a bug."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        self.attn_dropout = nn.Dropout(0.5)

    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        return self.out_proj(merge_heads(self.attn_dropout(att) @ v))


class Conv1D(nn.Module):
    """GPT-2's transposed linear layer: addmm with a (n_in, n_out) weight."""

    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Style(nn.Module):
    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int, block_size: int = 64):
        super().__init__()
        self.n_head, self.split_size = n_head, n_embd
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
                             .view(1, 1, block_size, block_size))

    def _split_heads(self, t):
        new_shape = t.size()[:-1] + (self.n_head, t.size(-1) // self.n_head)
        return t.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.split_size, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        T = q.size(-2)
        causal = self.bias[:, :, :T, :T]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = nn.functional.softmax(w, dim=-1)
        a = torch.matmul(w, v)
        a = a.permute(0, 2, 1, 3).contiguous()
        return self.c_proj(a.view(a.size()[:-2] + (a.size(-2) * a.size(-1),)))


class TorchMHABatchFirst(nn.Module):
    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(n_embd, n_head, batch_first=True)

    def forward(self, x):
        T = x.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        out, _ = self.mha(x, x, x, attn_mask=causal)
        return out


class TorchMHASeqFirst(nn.Module):
    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(n_embd, n_head)

    def forward(self, x):
        x = x.transpose(0, 1)  # (T, B, C), as the module expects
        out, _ = self.mha(x, x, x, need_weights=False)
        return out.transpose(0, 1)


class ManualSoftmax(Attention):
    """exp / sum instead of F.softmax: no softmax record, nothing to check, nothing flagged."""

    def forward(self, x):
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        w = (scores - scores.amax(-1, keepdim=True)).exp()
        return self.out_proj(merge_heads(w / w.sum(-1, keepdim=True) @ v))


class AttentionPooling(nn.Module):
    """Softmax over time, contracted by einsum with the features: pooling, not self-attention."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.score = nn.Linear(n_embd, 1)

    def forward(self, x):
        w = F.softmax(self.score(x).squeeze(-1), dim=1)
        return torch.einsum("bt,btc->bc", w, x)


class TiedLMHead(nn.Module):
    """Logits against the transposed embedding matrix: .T on a 2-axis tensor is right."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int, vocab_size: int = 19):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, n_embd)

    def forward(self, x):
        return x @ self.emb.weight.T


class PairwiseDistanceBias(Attention):
    """A learned per-token position, and the pairwise distances of it with itself as a bias."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        self.where = nn.Linear(n_embd, 1)

    def forward(self, x):
        q, k, v = self.heads(x)
        p = self.where(x).squeeze(-1)  # (B, T)
        distance = (p[:, :, None] - p[:, None, :]).abs()  # (B, T, T): every pair, on purpose
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size) - distance[:, None]
        return self.out_proj(merge_heads(F.softmax(scores, dim=-1) @ v))


class UnscaledT5Style(Attention):
    """No 1/sqrt(d) at all, as T5 does: only a warning."""

    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1), dim=-1)  # BUG
        return self.out_proj(merge_heads(att @ v))


# --------------------------------------------------------------------------------------------
# softmax-axis
# --------------------------------------------------------------------------------------------


class SoftmaxOverHeads(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=1)  # BUG
        return self.out_proj(merge_heads(att @ v))


class SoftmaxOverQueries(Attention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        att = scores.softmax(dim=-2)  # BUG
        return self.out_proj(merge_heads(att @ v))


class SoftmaxImplicitDim(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size))  # BUG
        return self.out_proj(merge_heads(att @ v))


class SoftmaxOverBatch(Attention):
    """(B*H, T, T) scores from bmm, normalised over the merged batch-and-heads axis."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.reshape(B * self.n_head, T, self.head_size) for t in self.heads(x))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_size)
        att = torch.softmax(scores, 0)  # BUG
        y = torch.bmm(att, v).view(B, self.n_head, T, self.head_size)
        return self.out_proj(merge_heads(y))


class EinsumKeysFirst(Attention):
    """The scores come out as (b, h, k, q); softmax(-1) then normalises over the queries."""

    def forward(self, x):
        q, k, v = self.heads(x)
        scores = torch.einsum("bhqd,bhkd->bhkq", q, k) / math.sqrt(self.head_size)  # BUG
        att = scores.softmax(dim=-1)
        return self.out_proj(merge_heads(att @ v))


class TransposedWeights(Attention):
    """Right softmax, but the weights are transposed before meeting the values."""

    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        y = att.transpose(-2, -1) @ v  # BUG
        return self.out_proj(merge_heads(y))


# --------------------------------------------------------------------------------------------
# attention-scale
# --------------------------------------------------------------------------------------------


class ScaleBySqrtC(Attention):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        self.n_embd = n_embd

    def forward(self, x):
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.n_embd)  # BUG
        return self.out_proj(merge_heads(F.softmax(scores, dim=-1) @ v))


class ScaleBySqrtH(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1)
        scores = scores * self.n_head ** -0.5  # BUG
        return self.out_proj(merge_heads(F.softmax(scores, dim=-1) @ v))


class ScaledTwice(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(scores / math.sqrt(self.head_size), dim=-1)  # BUG
        return self.out_proj(merge_heads(att @ v))


class ScaleByD(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / self.head_size, dim=-1)  # BUG
        return self.out_proj(merge_heads(att @ v))


class ScaledQThenSDPA(Attention):
    """q pre-scaled, then scaled_dot_product_attention scales again by default."""

    def forward(self, x):
        q, k, v = self.heads(x)
        q = q * self.head_size ** -0.5
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # BUG
        return self.out_proj(merge_heads(y))


class SDPAScaleSqrtC(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        C = x.shape[-1]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / math.sqrt(C))  # BUG
        return self.out_proj(merge_heads(y))


# --------------------------------------------------------------------------------------------
# unnormalized-attention
# --------------------------------------------------------------------------------------------


class MaskAfterSoftmax(Attention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        att = att.masked_fill(self.tril[:T, :T] == 0, 0.0)  # BUG
        return self.out_proj(merge_heads(att @ v))


class ScaleAfterSoftmax(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1), dim=-1)
        att = att / math.sqrt(self.head_size)  # BUG
        return self.out_proj(merge_heads(att @ v))


class MaskAfterSoftmaxEinsum(Attention):
    """The mask multiplies the weights after the softmax; the einsum then sums them."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        att = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_size), -1)
        att = att * self.tril[:T, :T]  # BUG
        return self.out_proj(merge_heads(torch.einsum("bhqk,bhkd->bhqd", att, v)))


# --------------------------------------------------------------------------------------------
# discarded-result
# --------------------------------------------------------------------------------------------


class MaskNotAssigned(Attention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))  # BUG
        att = F.softmax(scores, dim=-1)
        return self.out_proj(merge_heads(att @ v))


class ClampNotAssigned(Attention):
    """Soft-capping the scores, with the capped copy thrown away."""

    def forward(self, x):
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores.clamp(min=-5.0, max=5.0)  # BUG
        att = F.softmax(scores, dim=-1)
        return self.out_proj(merge_heads(att @ v))


class TransposeNotAssigned(Attention):
    """The transposed key is thrown away, so the matmul on the next line fails."""

    def forward(self, x):
        q, k, v = self.heads(x)
        k.transpose(-2, -1)  # BUG
        att = F.softmax(q @ k / math.sqrt(self.head_size), dim=-1)
        return self.out_proj(merge_heads(att @ v))


class MaskedScoresUnused(Attention):
    """The masked scores go into a new variable, and the softmax reads the old one."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        masked = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))  # BUG
        att = F.softmax(scores, dim=-1)
        return self.out_proj(merge_heads(att @ v))


def attention(q, k, v):
    """A plain function: its caller may drop the result without this line being at fault."""
    return F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


# --------------------------------------------------------------------------------------------
# silent-broadcast
# --------------------------------------------------------------------------------------------


class RegressionLoss(nn.Module):
    """pred (B, 1) minus target (B,) is (B, B): every prediction against every target."""

    INPUTS = ("x", "target")

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.head = nn.Linear(n_embd, 1)

    def forward(self, x, target):
        pred = self.head(x.mean(dim=1))
        return ((pred - target) ** 2).mean()  # BUG


class OuterSumScores(nn.Module):
    """(B, T, 1) + (B, 1, T): an outer sum where a per-token score was meant."""

    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.gate = nn.Linear(n_embd, 1)
        self.bias = nn.Linear(n_embd, 1)

    def forward(self, x):
        g = self.gate(x)
        b = self.bias(x).transpose(1, 2)
        return torch.sigmoid(g + b)  # BUG


class FirstSampleValues(Attention):
    """Values cut to the first sample, (1, H, T, d), then broadcast over the batch by the matmul."""

    def forward(self, x):
        q, k, v = self.heads(x)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size), dim=-1)
        y = att @ v[:1]  # BUG
        return self.out_proj(merge_heads(y))


# --------------------------------------------------------------------------------------------
# reversed-transpose
# --------------------------------------------------------------------------------------------


class SingleHead(nn.Module):
    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.head_size = n_embd // n_head
        self.key = nn.Linear(n_embd, self.head_size, bias=False)
        self.query = nn.Linear(n_embd, self.head_size, bias=False)
        self.value = nn.Linear(n_embd, self.head_size, bias=False)

    def forward(self, x):
        k, q, v = self.key(x), self.query(x), self.value(x)
        att = F.softmax(q @ k.transpose(-2, -1) * self.head_size ** -0.5, dim=-1)
        return att @ v


class DotT(SingleHead):
    """k.T on (B, T, d) is (d, T, B); the matmul then fails."""

    def forward(self, x):
        k, q, v = self.key(x), self.query(x), self.value(x)
        att = F.softmax(q @ k.T * self.head_size ** -0.5, dim=-1)  # BUG
        return att @ v


class DotTCall(SingleHead):
    def forward(self, x):
        k, q, v = self.key(x), self.query(x), self.value(x)
        kt = k.t()  # BUG
        att = F.softmax(q @ kt * self.head_size ** -0.5, dim=-1)
        return att @ v


class ReversedPermute(Attention):
    def forward(self, x):
        q, k, v = self.heads(x)
        kt = k.permute(*range(k.ndim - 1, -1, -1))  # BUG
        att = F.softmax(q @ kt / math.sqrt(self.head_size), dim=-1)
        return self.out_proj(merge_heads(att @ v))


# --------------------------------------------------------------------------------------------
# non-finite
# --------------------------------------------------------------------------------------------


class FullyMaskedRow(Attention):
    """A padding mask that hides every key of the first query: that softmax row is 0/0."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        hidden = torch.zeros(T, T, dtype=torch.bool)
        hidden[0] = True
        scores = scores.masked_fill(hidden, float("-inf"))
        att = F.softmax(scores, dim=-1)  # BUG
        return self.out_proj(merge_heads(att @ v))


class MaskTimesInf(Attention):
    """An additive mask built as (1 - tril) * -inf: 0 * -inf is NaN on every allowed position."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.heads(x)
        mask = (1 - self.tril[:T, :T]) * float("-inf")  # BUG
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_size) + mask, dim=-1)
        return self.out_proj(merge_heads(att @ v))


class LogOfZero(nn.Module):
    INPUTS = ("x",)

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        p = torch.relu(self.proj(x))
        return torch.log(p).mean()  # BUG
