"""Correct and buggy attention modules for the behaviour checks (causal, batch, determinism).

Every module takes its sizes as constructor arguments, so the tests can build it at the probe
sizes. In each buggy module, the line where shapetrace must locate the bug ends with a
``# located: <case>`` comment; the tests look the line number up from that marker.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


def split_heads(x: Float[Tensor, "B T C"], n_head: int) -> Float[Tensor, "B H T d"]:
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)


def merge_heads(y: Float[Tensor, "B H T d"]) -> Float[Tensor, "B T C"]:
    B, H, T, d = y.shape
    return y.transpose(1, 2).reshape(B, T, H * d)


# --------------------------------------------------------------------------------------------
# Correct modules
# --------------------------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """nanoGPT: fused qkv, a tril buffer, masked_fill with -inf, dropout modules."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.1):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        tril = torch.tril(torch.ones(block_size, block_size))
        self.register_buffer("bias", tril.view(1, 1, block_size, block_size))

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (split_heads(t, self.n_head) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        return self.resid_dropout(self.c_proj(merge_heads(y)))


class SeparateProjections(nn.Module):
    """q, k, v from three Linear layers; the mask fills with finfo.min; optionally causal."""

    def __init__(self, d_model: int, num_heads: int, causal: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.causal = causal
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.shape[1]
        q = split_heads(self.q_proj(x), self.num_heads)
        k = split_heads(self.k_proj(x), self.num_heads)
        v = split_heads(self.v_proj(x), self.num_heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if self.causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, torch.finfo(scores.dtype).min)
        return self.out_proj(merge_heads(scores.softmax(dim=-1) @ v))


class EinsumAttention(nn.Module):
    """Scores and the weighted sum written with einsum; the mask is a large negative number."""

    def __init__(self, d_model: int, num_heads: int, causal: bool = True):
        super().__init__()
        self.h = num_heads
        self.causal = causal
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).unbind(dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(C // self.h)
        if self.causal:
            keep = torch.tril(torch.ones(T, T, device=x.device))
            scores = scores.masked_fill(keep == 0, -1e4)
        att = scores.softmax(-1)
        y = torch.einsum("bhqk,bkhd->bqhd", att, v)
        return self.proj(y.reshape(B, T, C))


class SDPAAttention(nn.Module):
    """F.scaled_dot_product_attention with is_causal."""

    def __init__(self, d_model: int, num_heads: int, causal: bool = True, dropout: float = 0.1):
        super().__init__()
        self.num_heads = num_heads
        self.causal = causal
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        C = x.shape[-1]
        q, k, v = (split_heads(t, self.num_heads) for t in self.qkv(x).split(C, dim=-1))
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=self.causal, dropout_p=self.dropout if self.training else 0.0
        )
        return self.proj(merge_heads(y))


class GroupedQueryAttention(nn.Module):
    """GQA: n_kv_head key/value heads shared by groups of query heads (MQA when n_kv_head=1)."""

    def __init__(self, d_model: int, n_head: int, n_kv_head: int, expand: bool = False):
        super().__init__()
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.head_dim = d_model // n_head
        self.expand = expand
        self.wq = nn.Linear(d_model, n_head * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_head * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_head * self.head_dim, bias=False)
        self.wo = nn.Linear(n_head * self.head_dim, d_model, bias=False)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        group = self.n_head // self.n_kv_head
        if self.expand:  # MQA style: broadcast the single key/value head
            k = k.expand(B, self.n_head, T, self.head_dim)
            v = v.expand(B, self.n_head, T, self.head_dim)
        else:
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        att = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        return self.wo(merge_heads(att @ v))


class ALiBiAttention(nn.Module):
    """ALiBi: a per-head linear distance penalty added to the scores, plus the causal mask."""

    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        slopes = torch.tensor([2 ** (-8 * (i + 1) / n_head) for i in range(n_head)])
        self.register_buffer("slopes", slopes.view(1, n_head, 1, 1))

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=-1))
        pos = torch.arange(T, device=x.device)
        distance = (pos[None, :] - pos[:, None]).to(x.dtype)  # (T, T): key - query
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head) + self.slopes * distance
        scores = scores.masked_fill(distance > 0, float("-inf"))
        return self.proj(merge_heads(F.softmax(scores, dim=-1) @ v))


def rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryAttention(nn.Module):
    """Rotary position embeddings on q and k (head size must be even), causal SDPA."""

    def __init__(self, d_model: int, n_head: int, max_len: int, base: float = 10000.0):
        super().__init__()
        self.n_head = n_head
        head_dim = d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(max_len).float(), inv_freq)
        emb = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=-1))
        cos, sin = self.cos[:T], self.sin[:T]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(merge_heads(y))


class CrossAttentionBlock(nn.Module):
    """Causal self-attention on x, then cross-attention from x to a context (fully visible)."""

    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.self_attn = SDPAAttention(d_model, n_head, causal=True)
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"], context: Float[Tensor, "B S C"]) -> Float[Tensor, "B T C"]:
        x = x + self.self_attn(x)
        C = x.shape[-1]
        q = split_heads(self.q(x), self.n_head)
        k, v = (split_heads(t, self.n_head) for t in self.kv(context).split(C, dim=-1))
        att = (q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)).softmax(dim=-1)
        return x + self.proj(merge_heads(att @ v))


class PreNormBlock(nn.Module):
    """A GPT block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout)
        )

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class BatchFirstMHA(nn.Module):
    """nn.MultiheadAttention with batch_first=True and a causal mask (True = blocked there)."""

    def __init__(self, embed_dim: int, num_heads: int, causal: bool = True, dropout: float = 0.1):
        super().__init__()
        self.causal = causal
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1) if self.causal else None
        out, _ = self.mha(x, x, x, attn_mask=mask, need_weights=False)
        return out


class SeqFirstMHAWrapper(nn.Module):
    """nn.MultiheadAttention in its default (T, B, C) layout, transposed in and out properly."""

    def __init__(self, embed_dim: int, num_heads: int, causal: bool = True):
        super().__init__()
        self.causal = causal
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        T = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=x.device, dtype=x.dtype)
        x_tbc = x.transpose(0, 1)
        out, _ = self.mha(x_tbc, x_tbc, x_tbc, attn_mask=mask if self.causal else None)
        return out.transpose(0, 1)


class SeqFirstEncoder(nn.Module):
    """Takes x as (T, B, C), the PyTorch tutorial's layout, with its positional encoding."""

    def __init__(self, d_model: int, nhead: int, max_len: int):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term[: d_model // 2])
        self.register_buffer("pe", pe)
        self.mha = nn.MultiheadAttention(d_model, nhead)

    def forward(self, x: Float[Tensor, "T B C"]) -> Float[Tensor, "T B C"]:
        x = x + self.pe[: x.size(0)]
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(0), device=x.device, dtype=x.dtype)
        out, _ = self.mha(x, x, x, attn_mask=mask)
        return out


class MHAWithWeights(nn.Module):
    """Returns nn.MultiheadAttention's (output, averaged weights) tuple as is."""

    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x: Float[Tensor, "B T C"]) -> tuple[Tensor, Tensor]:
        T = x.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
        return self.mha(x, x, x, attn_mask=mask)


class TinyGPT(nn.Module):
    """Token and position embeddings, one block, a head; returns a dict of tensors."""

    def __init__(self, vocab_size: int, n_embd: int, n_head: int, block_size: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.block = PreNormBlock(n_embd, n_head, block_size)
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx: Int[Tensor, "B T"]) -> dict[str, Tensor]:
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        h = self.block(self.wte(idx) + self.wpe(pos))
        return {"logits": self.lm_head(self.ln_f(h)), "hidden": h}


class LastTokenLM(nn.Module):
    """nanoGPT at inference: without targets only the last position's logits come back."""

    def __init__(self, vocab_size: int, n_embd: int, n_head: int, block_size: int, leaky: bool = False):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        attn = UnassignedMask if leaky else CausalSelfAttention
        self.attn = attn(n_embd, n_head, block_size)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx: Int[Tensor, "B T"], targets: Tensor | None = None):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(x)
        logits = self.lm_head(x[:, [-1], :])  # (B, 1, V): the last position only
        return logits, None


class IndexedEmbeddingLM(nn.Module):
    """Looks its token table up by indexing (no nn.Embedding call); a causal decoder."""

    def __init__(self, vocab_size: int, n_embd: int, n_head: int):
        super().__init__()
        self.table = nn.Parameter(torch.randn(vocab_size, n_embd))
        self.attn = SDPAAttention(n_embd, n_head, causal=True)

    def forward(self, idx: Int[Tensor, "B T"]) -> Float[Tensor, "B T C"]:
        return self.attn(self.table[idx])


class ScalesInputInPlace(nn.Module):
    """Scales its input in place and branches on a value: the behaviour checks give each run a
    fresh copy, so they stay right (``check()`` reports the write as input-mutated)."""

    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.attn = SDPAAttention(d_model, n_head, causal=True)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        x.mul_(math.sqrt(x.shape[-1]))
        if x.abs().max().item() > 1e6:
            x = x / x.abs().max()
        return self.attn(x)


class Encoder(nn.Module):
    """A bidirectional encoder layer with a key padding mask input (bool, B x T)."""

    def __init__(self, d_model: int, nhead: int):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2 * d_model, batch_first=True)

    def forward(self, x: Float[Tensor, "B T C"], padding: Tensor) -> Float[Tensor, "B T C"]:
        return self.layer(x, src_key_padding_mask=padding)


# --------------------------------------------------------------------------------------------
# Buggy modules
# --------------------------------------------------------------------------------------------


class UnassignedMask(nn.Module):
    """masked_fill without assignment: the mask is computed and thrown away."""

    def __init__(self, n_embd: int, n_head: int, block_size: int):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (split_heads(t, self.n_head) for t in self.c_attn(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        att.masked_fill(self.bias[:T, :T] == 0, float("-inf"))  # made: unassigned-masked-fill
        att = F.softmax(att, dim=-1)  # located: unassigned-masked-fill
        return self.c_proj(merge_heads(att @ v))


class TinyFill(nn.Module):
    """Fills the future with -1e-9 (meant -1e9): the softmax barely notices."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(future, -1e-9)  # made: fill-minus-1e-9
        att = att.softmax(dim=-1)
        y = att @ v  # located: fill-minus-1e-9
        return self.proj(merge_heads(y))


class MeanOverTime(nn.Module):
    """A causal block whose hand-written norm averages over the time axis."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.attn = SDPAAttention(n_embd, n_head, causal=True)
        self.gain = nn.Parameter(torch.ones(n_embd))

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        mu = x.mean(dim=1, keepdim=True)  # located: mean-over-time
        h = (x - mu) * self.gain
        return x + self.attn(h)


class LayerNormOverTime(nn.Module):
    """F.layer_norm over the last two axes (T, C) instead of the features alone."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.attn = SDPAAttention(n_embd, n_head, causal=True)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        h = F.layer_norm(x, x.shape[-2:])  # located: layer-norm-over-time
        return x + self.attn(h)


class InvertedSDPAMask(nn.Module):
    """A boolean SDPA mask with masked_fill polarity: True there means 'may attend'."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (split_heads(t, self.num_heads) for t in self.qkv(x).split(C, dim=-1))
        future = torch.triu(torch.ones(T, T, device=x.device), 1).bool()  # made: sdpa-inverted-mask
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=future)  # located: sdpa-inverted-mask
        return self.proj(merge_heads(y))


class SoftmaxOverBatch(nn.Module):
    """Normalises the scores over dim=0, the batch axis."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        C = x.shape[-1]
        q, k, v = (split_heads(t, self.num_heads) for t in self.qkv(x).split(C, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.num_heads)
        att = F.softmax(scores, dim=0)  # located: softmax-over-batch
        return self.proj(merge_heads(att @ v))


class MHAWithoutBatchFirst(nn.Module):
    """nn.MultiheadAttention expects (T, B, C) by default; this feeds it (B, T, C)."""

    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)  # made: mha-without-batch-first

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        out, _ = self.mha(x, x, x)  # located: mha-without-batch-first
        return out


class EncoderLayerWithoutBatchFirst(nn.Module):
    """torch's encoder layer is (T, B, C) by default too; built over two lines, fed (B, T, C)."""

    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(  # made: encoder-without-batch-first
            d_model=embed_dim, nhead=num_heads, dim_feedforward=2 * embed_dim, dropout=0.0)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        return self.layer(x)  # located: encoder-without-batch-first


class PaddedLookAhead(nn.Module):
    """A decoder whose mask for nn.MultiheadAttention (True: hidden) joins the look-ahead
    triangle and the padding with ``&``: a later key is hidden only when it is also a real token,
    so every query sees the padding after it (ids of 0 are padding)."""

    def __init__(self, vocab: int, embed_dim: int, num_heads: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim)
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.num_heads = num_heads

    def forward(self, tokens: Int[Tensor, "B T"]) -> Float[Tensor, "B T C"]:
        B, T = tokens.shape
        x = self.embed(tokens)
        real = tokens.ne(0)[:, None, :]  # (B, 1, T)
        ahead = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        hidden = (real & ahead).repeat_interleave(self.num_heads, dim=0)  # made: padded-look-ahead
        return self.mha(x, x, x, attn_mask=hidden, need_weights=False)[0]  # located: padded-look-ahead


class PositionsFromBatch(nn.Module):
    """Learned positions indexed with x.shape[0], which is B for a (B, T, C) input."""

    def __init__(self, d_model: int, num_heads: int, max_len: int):
        super().__init__()
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.attn = SDPAAttention(d_model, num_heads, causal=True)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        pos = self.pos_emb(torch.arange(x.shape[0], device=x.device))  # located: positions-from-batch
        return self.attn(x + pos[:, None, :])


class TutorialPositionsOnBatchFirst(nn.Module):
    """The tutorial's (max_len, 1, C) positional table added to a (B, T, C) input."""

    def __init__(self, d_model: int, num_heads: int, max_len: int):
        super().__init__()
        self.register_buffer("pe", torch.randn(max_len, 1, d_model))
        self.attn = SDPAAttention(d_model, num_heads, causal=True)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        x = x + self.pe[: x.size(0)]  # located: tutorial-positions-on-batch-first
        return self.attn(x)


class DropoutInEval(nn.Module):
    """F.dropout without training=self.training stays on after model.eval()."""

    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.1):
        super().__init__()
        self.n_head = n_head
        self.dropout = dropout
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        att = F.softmax(att.masked_fill(future, float("-inf")), dim=-1)
        att = F.dropout(att, p=self.dropout)  # located: dropout-in-eval
        return self.proj(merge_heads(att @ v))


class CrossAttentionCausalContext(nn.Module):
    """Cross-attention whose query stream also attends to later query positions (no mask)."""

    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.self_attn = SDPAAttention(d_model, n_head, causal=False)
        self.cross = nn.MultiheadAttention(d_model, n_head, batch_first=True)

    def forward(self, x: Float[Tensor, "B T C"], context: Float[Tensor, "B S C"]) -> Float[Tensor, "B T C"]:
        x = x + self.self_attn(x)
        out, _ = self.cross(x, context, context, need_weights=False)
        return x + out


class RaisesInForward(nn.Module):
    """Fails on every call: the behaviour checks must stay quiet and not crash."""

    def __init__(self, d_model: int):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        return self.proj(x.transpose(1, 2))


class RaisesOnSecondCall(nn.Module):
    """Works once, then fails (a stale cache, a one-shot buffer): the failure is the module's."""

    def __init__(self, d_model: int):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.calls = 0

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("the cache was already consumed")
        return self.proj(x)


# --------------------------------------------------------------------------------------------
# Side inputs with a batch axis: lengths and padding masks (batch-leak)
# --------------------------------------------------------------------------------------------


def _d2l_heads(X, num_heads):
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1).permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])  # (B*H, T, d), sample-major


def _d2l_masked_softmax(X, valid_lens):
    shape = X.shape
    valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    X = X.reshape(-1, shape[-1])
    mask = torch.arange(shape[-1])[None, :] < valid_lens[:, None]
    X = X.masked_fill(~mask, -1e6)
    return F.softmax(X.reshape(shape), dim=-1)


class D2LValidLens(nn.Module):
    """d2l's MultiHeadAttention with valid_lens; ``interleave=False`` is the repeat bug."""

    def __init__(self, num_hiddens: int, num_heads: int, interleave: bool = True):
        super().__init__()
        self.num_heads, self.interleave = num_heads, interleave
        self.W_q, self.W_k = nn.Linear(num_hiddens, num_hiddens), nn.Linear(num_hiddens, num_hiddens)
        self.W_v, self.W_o = nn.Linear(num_hiddens, num_hiddens), nn.Linear(num_hiddens, num_hiddens)

    def forward(self, x: Float[Tensor, "B T C"], valid_lens: Tensor) -> Float[Tensor, "B T C"]:
        q, k, v = (_d2l_heads(w(x), self.num_heads) for w in (self.W_q, self.W_k, self.W_v))
        if self.interleave:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        else:
            valid_lens = valid_lens.repeat(self.num_heads)  # located: d2l-valid-lens-repeat
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        out = torch.bmm(_d2l_masked_softmax(scores, valid_lens), v)
        out = out.reshape(-1, self.num_heads, out.shape[1], out.shape[2]).permute(0, 2, 1, 3)
        return self.W_o(out.reshape(out.shape[0], out.shape[1], -1))


class PaddingPerHead(nn.Module):
    """A bool key-padding mask (B, T) expanded to the (B*H) rows; ``tile=True`` is the bug."""

    def __init__(self, d_model: int, n_head: int, tile: bool = False):
        super().__init__()
        self.h, self.tile = n_head, tile
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x: Float[Tensor, "B T C"], padding: Tensor) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = (t.reshape(B, T, self.h, -1).transpose(1, 2).reshape(B * self.h, T, -1)
                   for t in self.qkv(x).chunk(3, dim=-1))
        if self.tile:
            pad = padding.repeat(self.h, 1)  # located: padding-repeat
        else:
            pad = padding.repeat_interleave(self.h, dim=0)
        att = (q @ k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        att = att.masked_fill(pad[:, None, :], float("-inf")).softmax(-1)
        return (att @ v).reshape(B, self.h, T, -1).transpose(1, 2).reshape(B, T, C)
