"""A student's multi-head attention, with its sizes on the module (nanoGPT style), and twins with
one bug each: a split or merge without the transpose, a scale by sqrt(C), a softmax over the
queries."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bug=None):
        super().__init__()
        self.n_embd = n_embd
        self.n_head = n_head
        self.bug = bug
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        hs = C // self.n_head
        if self.bug == "split":
            q = q.reshape(B, self.n_head, T, hs)
            k = k.reshape(B, self.n_head, T, hs)
            v = v.reshape(B, self.n_head, T, hs)
        else:
            q = q.view(B, T, self.n_head, hs).transpose(1, 2)
            k = k.view(B, T, self.n_head, hs).transpose(1, 2)
            v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = q @ k.transpose(-2, -1)
        att = att / math.sqrt(C if self.bug == "scale" else hs)
        mask = torch.tril(torch.ones(T, T))
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-2 if self.bug == "softmax" else -1)
        y = att @ v
        if self.bug == "merge":
            y = y.reshape(B, T, C)
        else:
            y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class AnonymousAttention(CausalSelfAttention):
    """The same module with no size attributes: nothing proves what its sizes are."""

    def __init__(self, n_embd, n_head, bug=None):
        super().__init__(n_embd, n_head, bug)
        del self.n_embd
        self.heads = self.__dict__.pop("n_head")

    def __getattr__(self, name):
        if name == "n_head":
            return self.__dict__["heads"]
        if name == "n_embd":
            return self.c_proj.in_features
        return super().__getattr__(name)
