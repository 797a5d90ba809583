"""softmax-axis by meaning: what the weights contracted with the values sum to.

Every module is built as ``Model(n_embd, n_head)`` and called with ``x`` (B, T, C). In each buggy
module the line the finding must point at ends with ``# BUG: softmax-axis``.
"""

from __future__ import annotations

import math

import einops
import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def split(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        return [t.view(B, T, self.n_head, self.head_size).transpose(1, 2) for t in (q, k, v)]

    def merge(self, y):
        B, H, T, d = y.shape
        return self.proj(y.transpose(1, 2).reshape(B, T, H * d))


# --- correct: renormalised over the contracted axis, or the keys written first on purpose -------

class SlotAttention(nn.Module):
    """Locatello et al.: softmax over the slots, then a weighted mean over the inputs."""

    def __init__(self, n_embd: int, n_head: int, n_slots: int = 3, iters: int = 2):
        super().__init__()
        self.n_slots, self.iters, self.scale = n_slots, iters, n_embd ** -0.5
        self.slots = nn.Parameter(torch.randn(1, n_slots, n_embd))
        self.to_q = nn.Linear(n_embd, n_embd)
        self.to_k = nn.Linear(n_embd, n_embd)
        self.to_v = nn.Linear(n_embd, n_embd)
        self.update = nn.Linear(2 * n_embd, n_embd)
        self.eps = 1e-8

    def forward(self, x):
        B = x.shape[0]
        slots = self.slots.expand(B, -1, -1)
        k, v = self.to_k(x), self.to_v(x)
        for _ in range(self.iters):
            q = self.to_q(slots)
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.update(torch.cat([slots, updates], dim=-1))
        return slots


class SlotAttentionBmm(nn.Module):
    """The TensorFlow port: logits (B, inputs, slots), softmax over the slots (the last axis),
    renormalised over the inputs, contracted over the inputs with a transposed bmm."""

    def __init__(self, n_embd: int, n_head: int, n_slots: int = 3):
        super().__init__()
        self.scale = n_embd ** -0.5
        self.slots = nn.Parameter(torch.randn(1, n_slots, n_embd))
        self.to_q = nn.Linear(n_embd, n_embd)
        self.to_k = nn.Linear(n_embd, n_embd)
        self.to_v = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        slots = self.slots.expand(x.shape[0], -1, -1)
        q, k, v = self.to_q(slots), self.to_k(x), self.to_v(x)
        logits = torch.bmm(k, q.transpose(1, 2)) * self.scale
        attn = F.softmax(logits, dim=-1)
        attn = attn + 1e-8
        attn = attn / torch.sum(attn, dim=-2, keepdim=True)
        return torch.bmm(attn.transpose(1, 2), v)


class DoublyNormalised(_Heads):
    """Softmax over the queries, then renormalised over the keys before meeting the values."""

    def forward(self, x):
        q, k, v = self.split(x)
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.head_size)).softmax(dim=-2)
        att = att / att.sum(dim=-1, keepdim=True)
        return self.merge(att @ v)


class SinkhornAttention(_Heads):
    """Sinkhorn iterations, the last normalisation over the keys."""

    def forward(self, x):
        q, k, v = self.split(x)
        att = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) * self.head_size ** -0.5, dim=-2)
        for _ in range(2):
            att = att / att.sum(-1, keepdim=True)
            att = att / att.sum(-2, keepdim=True)
        att = att / att.sum(-1, keepdim=True)
        return self.merge(torch.einsum("bhqk,bhkd->bhqd", att, v))


class KeysOnTheLeft(_Heads):
    """Scores written (keys, queries): softmax over the keys (dim=-2), transposed for v."""

    def forward(self, x):
        q, k, v = self.split(x)
        scores = k @ q.transpose(-2, -1) / math.sqrt(self.head_size)
        att = scores.softmax(dim=-2)
        return self.merge(att.transpose(-2, -1) @ v)


class KeysFirstEinsum(_Heads):
    """Einsum scores laid out (b, h, k, q), normalised over k and contracted over k."""

    def forward(self, x):
        q, k, v = self.split(x)
        scores = torch.einsum("bhqd,bhkd->bhkq", q, k) / math.sqrt(self.head_size)
        att = scores.softmax(dim=2)
        return self.merge(torch.einsum("bhkq,bhkd->bhqd", att, v))


class TimeFirstBmm(nn.Module):
    """fairseq's layout: (T, B, C) in, heads folded into the batch, bmm on (B*H, T, T)."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        self.in_proj = nn.Linear(n_embd, 3 * n_embd)
        self.out_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        x = x.transpose(0, 1)
        T, B, C = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q, k, v = (t.contiguous().view(T, B * self.n_head, self.head_size).transpose(0, 1)
                   for t in (q, k, v))
        w = torch.bmm(q * self.head_size ** -0.5, k.transpose(1, 2))
        w = F.softmax(w.float(), dim=-1).type_as(w)
        y = torch.bmm(w, v).transpose(0, 1).contiguous().view(T, B, C)
        return self.out_proj(y).transpose(0, 1)


CORRECT = [SlotAttention, SlotAttentionBmm, DoublyNormalised, SinkhornAttention, KeysOnTheLeft,
           KeysFirstEinsum, TimeFirstBmm]


# --- buggy: the weights do not sum to 1 along the axis contracted with the values ---------------

class OverHeadsEinsum(_Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_size)
        att = scores.softmax(dim=1)  # BUG: softmax-axis
        return self.merge(torch.einsum("bhqk,bhkd->bhqd", att, v))


class OverQueriesEinops(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        q, k, v = einops.rearrange(self.qkv(x), "b t (three h d) -> three b h t d", three=3,
                                   h=self.n_head)
        dots = einops.einsum(q, k, "b h i d, b h j d -> b h i j") * q.shape[-1] ** -0.5
        attn = dots.softmax(dim=-2)  # BUG: softmax-axis
        out = einops.einsum(attn, v, "b h i j, b h j d -> b h i d")
        return self.proj(einops.rearrange(out, "b h t d -> b t (h d)"))


class OverBatchTimeFirst(TimeFirstBmm):
    def forward(self, x):
        x = x.transpose(0, 1)
        T, B, C = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q, k, v = (t.contiguous().view(T, B * self.n_head, self.head_size).transpose(0, 1)
                   for t in (q, k, v))
        w = torch.bmm(q * self.head_size ** -0.5, k.transpose(1, 2))
        w = F.softmax(w, dim=0)  # BUG: softmax-axis
        y = torch.bmm(w, v).transpose(0, 1).contiguous().view(T, B, C)
        return self.out_proj(y).transpose(0, 1)


class OverQueriesMatmul(_Heads):
    def forward(self, x):
        q, k, v = self.split(x)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_size)
        att = torch.softmax(att, dim=2)  # BUG: softmax-axis
        return self.merge(torch.matmul(att, v))


class SlotsNotRenormalised(SlotAttention):
    """Softmax over the slots and straight into the values: the mean over inputs is lost."""

    def forward(self, x):
        B = x.shape[0]
        slots = self.slots.expand(B, -1, -1)
        k, v = self.to_k(x), self.to_v(x)
        q = self.to_q(slots)
        dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
        attn = dots.softmax(dim=1)  # BUG: softmax-axis
        return torch.einsum("bjd,bij->bid", v, attn)


class RenormalisedOverTheWrongAxis(_Heads):
    """Softmax over the queries, 'renormalised' over the queries again: the keys never sum to 1."""

    def forward(self, x):
        q, k, v = self.split(x)
        att = (q @ k.transpose(-2, -1) * self.head_size ** -0.5).softmax(dim=-2)  # BUG: softmax-axis
        att = att / att.sum(dim=-2, keepdim=True)
        return self.merge(att @ v)


BUGGY = [OverHeadsEinsum, OverQueriesEinops, OverBatchTimeFirst, OverQueriesMatmul,
         SlotsNotRenormalised, RenormalisedOverTheWrongAxis]
