"""unnormalized-attention, judged by what the weights sum to: weights masked after the softmax and
renormalised (by a sum, with an epsilon), a softmax written out by hand (exp over sum,
``log_softmax().exp()``), sparsemax (exact zeros, still a distribution), sigmoid attention
(no sum to 1 by design, and no softmax either), a float32 softmax cast back; and buggy twins
(a key-padding mask multiplied in after the softmax, renormalised over the queries, a causal
mask multiplied in, a temperature applied after the softmax), each marked ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.h, self.d = n_head, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def qkv_heads(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        return [t.view(B, T, self.h, self.d).transpose(1, 2) for t in (q, k, v)]

    def scores(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(self.d)

    def merge(self, y):
        B, H, T, d = y.shape
        return self.out(y.transpose(1, 2).reshape(B, T, H * d))


def sparsemax(z, dim=-1):
    """Martins & Astudillo (2016): the Euclidean projection onto the simplex."""
    z = z.transpose(dim, -1)
    srt, _ = torch.sort(z, dim=-1, descending=True)
    cumsum = srt.cumsum(-1) - 1
    ks = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)
    support = (srt * ks > cumsum).to(z.dtype)
    k = support.sum(-1, keepdim=True)
    tau = cumsum.gather(-1, k.long() - 1) / k
    return torch.clamp(z - tau, min=0).transpose(dim, -1)


# --- correct ----------------------------------------------------------------------------------------

class CausalMaskAfterSoftmaxRenormalised(_Heads):
    """The mask multiplied in after the softmax, then the rows divided by their sums."""

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        T = x.shape[1]
        att = self.scores(q, k).softmax(-1) * torch.tril(torch.ones(T, T))
        att = att / att.sum(-1, keepdim=True)
        return self.merge(att @ v)


class PaddingRenormalisedWithEps(_Heads):
    """A key-padding mask after the softmax, renormalised with an epsilon in the denominator."""

    INPUTS = ["x=B,T,C", "lengths=B:long:T"]

    def forward(self, x, lengths):
        q, k, v = self.qkv_heads(x)
        T = x.shape[1]
        keep = torch.arange(T)[None, :] <= lengths[:, None]  # at least one key per sample
        att = self.scores(q, k).softmax(-1) * keep[:, None, None, :]
        att = att / (att.sum(-1, keepdim=True) + 1e-9)
        return self.merge(att @ v)


class ExpOverSum(_Heads):
    """A softmax by hand, max subtracted."""

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        s = self.scores(q, k)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        att = e / e.sum(dim=-1, keepdim=True)
        return self.merge(att @ v)


class LogSoftmaxExp(_Heads):
    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        att = F.log_softmax(self.scores(q, k), dim=-1).exp()
        return self.merge(att @ v)


class Sparsemax(_Heads):
    """Sparse weights with exact zeros, each row still a distribution."""

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        att = sparsemax(self.scores(q, k), dim=-1)
        return self.merge(att @ v)


class SigmoidAttention(_Heads):
    """Ramapuram et al. (2024): sigmoid(scores - log T) in place of the softmax. The weights do
    not sum to 1 by design."""

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        T = x.shape[1]
        att = torch.sigmoid(self.scores(q, k) - math.log(T))
        return self.merge(att @ v)


class SoftmaxFloat32CastBack(_Heads):
    """Mixed-precision style: the softmax in float32, cast back to the values' dtype, then an
    inactive dropout module."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        att = F.softmax(self.scores(q, k), dim=-1, dtype=torch.float32).to(v.dtype)
        return self.merge(self.drop(att) @ v)


class EinsumWeightsTransposedUse(_Heads):
    """The weights contracted over the keys by an einsum that names the keys first."""

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        att = torch.einsum("bhqd,bhkd->bhkq", q, k).div(math.sqrt(self.d)).softmax(dim=2)
        return self.merge(torch.einsum("bhkq,bhkd->bhqd", att, v))


# --- buggy ------------------------------------------------------------------------------------------

class PaddingAfterSoftmax(_Heads):
    """A key-padding mask multiplied into the probabilities, no renormalisation."""

    BUG = "unnormalized-attention"
    INPUTS = ["x=B,T,C", "lengths=B:long:T"]

    def forward(self, x, lengths):
        q, k, v = self.qkv_heads(x)
        T = x.shape[1]
        keep = torch.arange(T)[None, :] <= lengths[:, None]
        att = self.scores(q, k).softmax(-1)
        att = att * keep[:, None, None, :]  # BUG
        return self.merge(att @ v)


class RenormalisedOverQueries(_Heads):
    """Masked after the softmax and renormalised, but over dim=-2 (the queries). The finding
    is at the mask, the first op after the softmax that changed the weights; its hint gives the
    renormalisation over dim=-1."""

    BUG = "unnormalized-attention"

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        T = x.shape[1]
        att = self.scores(q, k).softmax(-1) * torch.tril(torch.ones(T, T))  # BUG
        att = att / att.sum(-2, keepdim=True)
        return self.merge(att @ v)


class CausalMultipliedAfterSoftmax(_Heads):
    BUG = "unnormalized-attention"

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        T = x.shape[1]
        att = F.softmax(self.scores(q, k), dim=-1)
        att = att * torch.tril(torch.ones(T, T, dtype=att.dtype))  # BUG
        return self.merge(att @ v)


class TemperatureAfterSoftmax(_Heads):
    """A learned temperature meant for the scores, applied to the probabilities."""

    BUG = "unnormalized-attention"

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.temperature = nn.Parameter(torch.full((n_head, 1, 1), 2.0))

    def forward(self, x):
        q, k, v = self.qkv_heads(x)
        att = self.scores(q, k).softmax(-1) * self.temperature  # BUG
        return self.merge(att @ v)
