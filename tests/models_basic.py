"""Small modules for the foundation tests: nanoGPT-style attention, right and wrong.

Every line a test points at carries a ``# <- tag`` comment; ``line_of(tag)`` finds it, so the
tests do not hard-code line numbers. Sizes are the default probe sizes (``B=5, T=7, H=11, d=13,
C=143``) unless a test says otherwise.
"""

from __future__ import annotations

import math
from pathlib import Path

import einops
import torch
import torch.nn as nn
import torch.nn.functional as F

B, T, H, d = 5, 7, 11, 13
C = H * d
V = 19

FILE = Path(__file__).resolve()


def line_of(tag: str) -> int:
    """The 1-based line of this file whose ``# <- tag`` comment is ``tag``."""
    marker = f"# <- {tag}"
    lines = FILE.read_text().splitlines()
    found = [i for i, text in enumerate(lines, 1) if text.rstrip().endswith(marker)]
    if len(found) != 1:
        raise LookupError(f"{marker!r} is on {len(found)} lines of {FILE.name}")
    return found[0]


# --- correct attention ------------------------------------------------------------------------

class MHA(nn.Module):
    """nanoGPT's CausalSelfAttention, line for line."""

    def __init__(self, n_embd: int = C, n_head: int = H, block_size: int = 16,
                 dropout: float = 0.0):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)  # <- mha-qkv
        k = k.view(B, T, self.n_head, C // self.n_head)  # <- mha-view
        k = k.transpose(1, 2)  # <- mha-transpose
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(-2, -1)  # <- mha-scores
        att = att * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))  # <- mha-mask
        att = F.softmax(att, dim=-1)  # <- mha-softmax
        att = self.attn_dropout(att)
        y = att @ v  # <- mha-values
        y = y.transpose(1, 2)  # <- mha-back
        y = y.contiguous().view(B, T, C)  # <- mha-merge
        return self.c_proj(y)  # <- mha-proj


class MLP(nn.Module):
    def __init__(self, n_embd: int = C, dropout: float = 0.1):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    """A GPT block: pre-norm attention and MLP with residuals."""

    def __init__(self, n_embd: int = C, n_head: int = H, dropout: float = 0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = MHA(n_embd, n_head, dropout=dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    """Embeddings, two blocks and a head: enough of a GPT to exercise every common op."""

    def __init__(self, vocab_size: int = V, n_embd: int = C, n_head: int = H, block_size: int = 16):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(2)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class SDPAttention(nn.Module):
    """Fused qkv, F.scaled_dot_product_attention, einops for the head split."""

    def __init__(self, n_embd: int = C, n_head: int = H):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        qkv = einops.rearrange(self.qkv(x), "b t (three h d) -> three b h t d",
                               three=3, h=self.n_head)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        return self.proj(einops.rearrange(y, "b h t d -> b t (h d)"))


class DropoutModel(nn.Module):
    """Dropout as a module and as a call that follows ``self.training``."""

    def __init__(self, n_embd: int = C):
        super().__init__()
        self.fc = nn.Linear(n_embd, n_embd)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(F.relu(self.fc(x)))
        return F.dropout(h, 0.3, training=self.training)


class TorchMHA(nn.Module):
    """torch's own nn.MultiheadAttention, wrapped the way students use it."""

    def __init__(self, n_embd: int = C, n_head: int = H, batch_first: bool = False):
        super().__init__()
        self.mha = nn.MultiheadAttention(n_embd, n_head, batch_first=batch_first)

    def forward(self, x):
        y, _ = self.mha(x, x, x)  # <- torch-mha
        return y


class Recorder(nn.Module):
    """Keeps a weak reference to the activation its ``inner`` module returns."""

    def __init__(self, n_embd: int = C):
        super().__init__()
        self.inner = nn.Linear(n_embd, n_embd)
        self.seen = []

    def forward(self, x):
        import weakref

        h = F.gelu(self.inner(x))
        self.seen.append(weakref.ref(h))
        return h.sum(-1)


# --- reshape-jumble: buggy -------------------------------------------------------------------

class ViewJumble(nn.Module):
    """(B, T, C) -> (B, H, T, d) in one view: the demo's bug, with separate projections."""

    def __init__(self, n_embd: int = C, n_head: int = H):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd)
        self.key = nn.Linear(n_embd, n_embd)
        self.value = nn.Linear(n_embd, n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q = self.query(x).view(B, self.n_head, T, C // self.n_head)  # <- view-jumble
        k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.size(-1)), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class MergeWithoutTranspose(nn.Module):
    """Splits the heads correctly, then merges (B, H, T, d) straight back to (B, T, C)."""

    def __init__(self, n_embd: int = C, n_head: int = H):
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
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.size(-1)), dim=-1)
        y = (att @ v).reshape(B, T, C)  # <- merge-jumble
        return self.c_proj(y)


class SeqFirstView(nn.Module):
    """Makes a sequence-first tensor with .view instead of .transpose."""

    def forward(self, x):
        B, T, C = x.shape
        return x.view(T, B, C)  # <- seq-first-jumble


class Transpose13Merge(nn.Module):
    """Moves the wrong axes, transpose(1, 3), before merging the heads."""

    def forward(self, y):
        B, H, T, d = y.shape
        return y.transpose(1, 3).reshape(B, T, H * d)  # <- transpose13-jumble


# --- reshape-jumble: correct -----------------------------------------------------------------

class FusedPermute(nn.Module):
    """(B, T, 3C) -> (B, T, 3, H, d) -> permute(2, 0, 3, 1, 4) -> (3, B, H, T, d)."""

    def __init__(self, n_embd: int = C, n_head: int = H):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        att = (q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


class GroupedQueryAttention(nn.Module):
    """GQA: n_kv_head key/value heads, each shared by n_rep query heads.

    n_head = n_kv_head * n_rep.
    """

    def __init__(self, n_embd: int, n_head: int, n_kv_head: int):
        super().__init__()
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.head_dim = n_embd // n_head
        self.q_proj = nn.Linear(n_embd, n_embd)
        self.kv_proj = nn.Linear(n_embd, 2 * n_kv_head * self.head_dim)
        self.o_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        Hkv, rep, hd = self.n_kv_head, self.n_head // self.n_kv_head, self.head_dim
        q = self.q_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
        k, v = self.kv_proj(x).view(B, T, 2, Hkv, hd).permute(2, 0, 3, 1, 4)
        k = k[:, :, None].expand(B, Hkv, rep, T, hd).reshape(B, Hkv * rep, T, hd)  # <- gqa-k
        v = v[:, :, None].expand(B, Hkv, rep, T, hd).reshape(B, Hkv * rep, T, hd)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))


class EinopsRoundTrip(nn.Module):
    def __init__(self, n_head: int = H):
        super().__init__()
        self.n_head = n_head

    def forward(self, x):
        q = einops.rearrange(x, "b t (h d) -> b h t d", h=self.n_head)
        return einops.rearrange(q, "b h t d -> b t (h d)")


class FoldHeadsIntoBatch(nn.Module):
    """(B, H, T, d) -> (B*H, T, d), torch.bmm, and back."""

    def forward(self, q, k, v):
        B, H, T, d = q.shape
        q, k, v = (t.reshape(B * H, T, d) for t in (q, k, v))
        att = torch.bmm(q, k.transpose(1, 2)).softmax(-1)
        return torch.bmm(att, v).view(B, H, T, d)


class TransposeReshape(nn.Module):
    def forward(self, y):
        B, H, T, d = y.shape
        return y.transpose(1, 2).reshape(B, T, H * d)


# --- ops that fail --------------------------------------------------------------------------

class WrongKeyTranspose(nn.Module):
    """Transposes the wrong axes of k: q (B, H, T, d) @ (B, T, H, d) raises."""

    def __init__(self, n_embd: int = C, n_head: int = H):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(1, 2)  # <- wrong-key-transpose
        return att.softmax(-1) @ v


class ViewAfterTranspose(nn.Module):
    """Merges the heads with .view right after a transpose."""

    def forward(self, y):
        B, H, T, d = y.shape
        y = y.transpose(1, 2)  # <- made-noncontiguous
        return y.view(B, T, H * d)  # <- noncontiguous-view


class RaisesInForward(nn.Module):
    """The user's own exception, raised after a few ops."""

    error = ValueError("students sometimes raise their own errors")

    def __init__(self, n_embd: int = C):
        super().__init__()
        self.fc = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        h = self.fc(x).relu()
        if h.shape[-1] == self.fc.out_features:
            raise self.error  # <- user-raise
        return h
