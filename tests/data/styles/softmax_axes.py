"""softmax-axis on single-head (B, T, T) scores and multi-head (B, H, T, T) ones, written the
ways other material writes them: keys on axis 1 (``k @ q^T``, ``einsum('bqd,bkd->bkq')``) where
``dim=1`` is right, ``nn.Softmax`` modules, ``dim=scores.dim() - 1``, ``log_softmax().exp()``,
a softmax with no attention after it (a pooling), and the slips: dim=1 over the queries of a
(B, T, T) score table, dim=1 over the heads, an ``nn.Softmax(dim=1)`` built in ``__init__``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Single(nn.Module):
    INIT = {"d_model": "C", "d_head": "d"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, d_head):
        super().__init__()
        self.d_head = d_head
        self.W_q = nn.Linear(d_model, d_head, bias=False)
        self.W_k = nn.Linear(d_model, d_head, bias=False)
        self.W_v = nn.Linear(d_model, d_head, bias=False)


class SingleHeadBmm(_Single):
    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d_head)
        return torch.bmm(F.softmax(scores, dim=2), v)


class SingleHeadOverQueries(_Single):
    BUG = "softmax-axis"

    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d_head)
        weights = F.softmax(scores, dim=1)  # BUG
        return torch.bmm(weights, v)


class KeysFirstScores(_Single):
    """Scores laid out (B, keys, queries): ``k @ q^T``, the softmax over dim=1 (the keys),
    the weights transposed back before the values."""

    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = k @ q.transpose(1, 2) / math.sqrt(self.d_head)
        weights = scores.softmax(dim=1)
        return weights.transpose(1, 2) @ v


class KeysFirstEinsum(_Single):
    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.einsum("bqd,bkd->bkq", q, k) * self.d_head ** -0.5
        return torch.einsum("bkq,bkd->bqd", scores.softmax(1), v)


class KeysFirstEinsumOverQueries(_Single):
    """The softmax over the last axis out of habit, on scores laid out (B, keys, queries): the
    finding names the einsum that chose the layout (and the softmax line in its message). The
    weights still average the values, q serving as the keys: a warning."""

    BUG = "softmax-axis"
    VARIANT = "keys-first"

    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.einsum("bqd,bkd->bkq", q, k) * self.d_head ** -0.5  # BUG
        weights = scores.softmax(2)
        return torch.einsum("bkq,bkd->bqd", weights, v)


class _Multi(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_head = n_head, d_model // n_head
        self.to_qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.to_out = nn.Linear(d_model, d_model)

    def split(self, x):
        B, T, C = x.shape
        qkv = self.to_qkv(x).view(B, T, 3, self.n_head, self.d_head)
        return qkv.permute(2, 0, 3, 1, 4).unbind(0)

    def merge(self, out):
        B, H, T, d = out.shape
        return self.to_out(out.permute(0, 2, 1, 3).reshape(B, T, H * d))


class SoftmaxModule(_Multi):
    """``self.attend = nn.Softmax(dim=-1)`` (vit-pytorch)."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.attend = nn.Softmax(dim=-1)

    def forward(self, x):
        q, k, v = self.split(x)
        return self.merge(self.attend(q @ k.transpose(-1, -2) * self.d_head ** -0.5) @ v)


class SoftmaxModuleOverHeads(_Multi):
    BUG = "softmax-axis"

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.attend = nn.Softmax(dim=1)  # BUG

    def forward(self, x):
        q, k, v = self.split(x)
        attn = self.attend(q @ k.transpose(-1, -2) * self.d_head ** -0.5)
        return self.merge(attn @ v)


class LastDimByRank(_Multi):
    def forward(self, x):
        q, k, v = self.split(x)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_head)
        return self.merge(torch.matmul(F.softmax(scores, dim=scores.dim() - 1), v))


class OverHeadsDim1(_Multi):
    """dim=1 copied from a single-head (B, T, T) version: on (B, H, T, T) it is the heads."""

    BUG = "softmax-axis"

    def forward(self, x):
        q, k, v = self.split(x)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_head)
        return self.merge(torch.matmul(F.softmax(scores, dim=1), v))  # BUG


class LogSoftmaxExp(_Multi):
    """Weights computed in log space, ``log_softmax(-1).exp()``."""

    def forward(self, x):
        q, k, v = self.split(x)
        logits = q @ k.transpose(-1, -2) * self.d_head ** -0.5
        return self.merge(logits.log_softmax(dim=-1).exp() @ v)


class AttentionPooling(nn.Module):
    """A learned score per token, softmax over the tokens (dim=1 of (B, T, 1)), a weighted sum."""

    INIT = {"d_model": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model):
        super().__init__()
        self.score = nn.Linear(d_model, 1)

    def forward(self, x):
        w = torch.softmax(self.score(x), dim=1)
        return (w * x).sum(dim=1)
