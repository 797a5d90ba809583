"""Student submissions compared with reference_models/m06_multi_head.py::MultiHeadAttention.

Each class takes the reference's constructor arguments (n_embd, n_head, block_size, dropout).
A line marked ``# PARTS: <kind>`` is where the module parts from the reference.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Correct(nn.Module):
    """Other parameter names (keys differ), an explicit mask buffer, a float -1e9 fill."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.h, self.d = n_head, n_embd // n_head
        self.W_query = nn.Linear(n_embd, n_embd, bias=False)
        self.W_key = nn.Linear(n_embd, n_embd, bias=False)
        self.W_value = nn.Linear(n_embd, n_embd, bias=False)
        self.out_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1))

    def forward(self, x):
        B, T, C = x.shape
        q = self.W_query(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.h, self.d).transpose(1, 2)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.d)
        scores = scores.masked_fill(self.mask.bool()[:T, :T], -1e9)
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, C)
        return self.out_proj(out)


class SameKeysSDPA(nn.Module):
    """The reference's parameter names, SDPA instead of the explicit softmax."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (lin(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for lin in (self.query, self.key, self.value))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class EinsumBHLayout(nn.Module):
    """Heads folded into the batch axis (B*H, T, d) and einsum products."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, C // self.n_head

        def heads(t):
            return t.view(B, T, H, d).transpose(1, 2).reshape(B * H, T, d)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.einsum("ntd,nsd->nts", q, k) * d**-0.5
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        out = torch.einsum("nts,nsd->ntd", scores.softmax(-1), v)
        return self.proj(out.view(B, H, T, d).transpose(1, 2).reshape(B, T, C))


class JumbledHeads(nn.Module):
    """Splits heads with a bare reshape: every shape is right, the heads hold mixed tokens."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, C // self.n_head
        q = self.query(x).reshape(B, H, T, d)  # PARTS: jumbled
        k = self.key(x).view(B, T, H, d).transpose(1, 2)
        v = self.value(x).view(B, T, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / d**0.5
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(out)


class ScaledBySqrtC(nn.Module):
    """Scales the scores by 1/sqrt(C) instead of 1/sqrt(d)."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, C // self.n_head
        q = self.query(x).view(B, T, H, d).transpose(1, 2)
        k = self.key(x).view(B, T, H, d).transpose(1, 2)
        v = self.value(x).view(B, T, H, d).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(C)  # PARTS: scale
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(out)


class NotMasked(nn.Module):
    """Forgets the causal mask."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, C // self.n_head
        q = self.query(x).view(B, T, H, d).transpose(1, 2)
        k = self.key(x).view(B, T, H, d).transpose(1, 2)
        v = self.value(x).view(B, T, H, d).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        weights = scores.softmax(dim=-1)  # PARTS: masking
        out = (weights @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(out)


class FusedQKV(nn.Module):
    """One (3C, C) projection, split in q, k, v order (correct)."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(out.transpose(1, 2).contiguous().view(B, T, C))


class FusedPerHead(nn.Module):
    """One (3C, C) projection laid out per head (view(B, T, H, 3*d)), k before q (correct)."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.out = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        k, q, v = self.qkv(x).view(B, T, H, 3 * (C // H)).transpose(1, 2).chunk(3, dim=-1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(out.transpose(1, 2).reshape(B, T, C))


class FusedScaledTwice(nn.Module):
    """Fused projection split in q, k, v order; the scores are scaled twice."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * d**-0.5 / math.sqrt(d)  # PARTS: twice
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.c_proj((weights @ v).transpose(1, 2).reshape(B, T, C))


class PerHeadList(nn.Module):
    """A list of single heads with (d, C) weights: no layout that matches (C, C) ones."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        d = n_embd // n_head
        self.heads = nn.ModuleList(nn.Linear(n_embd, 3 * d, bias=False) for _ in range(n_head))
        self.proj = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        T = x.shape[1]
        outs = []
        for head in self.heads:
            q, k, v = head(x).chunk(3, dim=-1)
            outs.append(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return self.proj(torch.cat(outs, dim=-1))
