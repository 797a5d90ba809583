"""Weights that cannot move the output (weight-without-effect), and modules whose weights all
matter or are idle by design. Each buggy module marks the line the rule must point at with
``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.up = nn.Linear(n_embd, 2 * n_embd)
        self.down = nn.Linear(2 * n_embd, n_embd)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class MixerBlock(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.mlp = Mlp(n_embd)

    def attend(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MlpResultLost(MixerBlock):
    """The MLP's output is added to a stream that is then not the one returned."""

    def forward(self, x):
        h = x + self.attend(self.ln1(x))
        out = h + self.mlp(self.ln2(h))  # BUG
        if out.isnan().any():
            raise ValueError("non-finite")
        return h


class MlpResultUsed(MixerBlock):
    def forward(self, x):
        h = x + self.attend(self.ln1(x))
        return h + self.mlp(self.ln2(h))


class GateTimesZero(MixerBlock):
    """A gate read through `* 0` instead of `* 1`: the attention branch contributes nothing."""

    def forward(self, x):
        branch = self.attend(self.ln1(x))
        h = x + branch * torch.zeros_like(branch[..., :1])  # BUG
        return h + self.mlp(self.ln2(h))


class ZeroInitGate(MixerBlock):
    """ReZero: the branches are scaled by gates that start at zero, by design."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.alpha = nn.Parameter(torch.zeros(1))
        self.beta = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        h = x + self.alpha * self.attend(x)
        return h + self.beta * self.mlp(h)


class FrozenTeacherAndCache(MixerBlock):
    """A frozen branch, a branch only taken with a cache, and an embedding table whose rows are
    mostly not looked up: none of these weights is a finding."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.teacher = nn.Linear(n_embd, n_embd)
        self.teacher.requires_grad_(False)
        self.cache_proj = nn.Linear(n_embd, n_embd)
        self.types = nn.Embedding(50, n_embd)

    def forward(self, x, cache=None):
        h = x + self.attend(self.ln1(x)) + self.types(torch.zeros_like(x[..., 0], dtype=torch.long))
        with torch.no_grad():
            target = self.teacher(x)
        if cache is not None:
            h = h + self.cache_proj(cache)
        return h + self.mlp(self.ln2(h)), target


class AuxiliaryLossKept(MixerBlock):
    """A router computes a balance loss kept on the module: its weight reaches that, not the
    output's values."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.router = nn.Linear(n_embd, 4)

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        self.aux_loss = (probs.mean((0, 1)) ** 2).sum() * 4
        return x + self.mlp(self.ln2(x))


class LocationFromPreviousWeights(nn.Module):
    """Location-aware attention: a convolution over the previous step's weights, zeros on the
    first call (none given yet). Its weight cannot move this call's output by design."""

    def __init__(self, n_embd):
        super().__init__()
        self.location = nn.Conv1d(1, n_embd, kernel_size=3, padding=1)
        self.query = nn.Linear(n_embd, n_embd)
        self.score = nn.Linear(n_embd, 1)

    def forward(self, x, previous=None):
        B, T, C = x.shape
        if previous is None:
            previous = x.new_zeros(B, T)
        where = self.location(previous.unsqueeze(1)).transpose(1, 2)
        weights = torch.softmax(self.score(torch.tanh(self.query(x) + where)).squeeze(-1), dim=-1)
        return torch.bmm(weights.unsqueeze(1), x).squeeze(1)
