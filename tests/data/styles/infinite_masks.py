"""Masks that put -inf in on purpose (the non-finite probe must not take the fill for the bug):
``torch.full(..., -inf).triu(1)`` added to the scores, ``torch.where(mask, scores, -inf)``, a
mask padded with ``F.pad`` for a null key, rows left fully masked and zeroed after the softmax,
an entropy written with ``xlogy``; and the slips that do make NaN reach the output (the diagonal
masked too, a mask read the wrong way round, ``p * log p`` on exact zeros)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def qkv_heads(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split(self.d_model, dim=2)
        return [t.view(B, T, self.n_head, self.d_head).transpose(1, 2) for t in (q, k, v)]

    def scores(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(self.d_head)

    def merge(self, attn, v):
        B, _, T, _ = attn.shape
        return self.out((attn @ v).transpose(1, 2).contiguous().view(B, T, self.d_model))


class FullTriuAdded(_Heads):
    """nn.Transformer's ``generate_square_subsequent_mask``: -inf above the diagonal, added."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        mask = torch.full((T, T), float("-inf"), dtype=x.dtype).triu(1)
        return self.merge((self.scores(q, k) + mask).softmax(dim=-1), v)


class FullTriuDiagonalToo(_Heads):
    """``triu(0)``: the first query sees no key at all; its NaN row reaches the output."""

    BUG = "non-finite"

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        mask = torch.full((T, T), float("-inf"), dtype=x.dtype).triu(0)
        return self.merge((self.scores(q, k) + mask).softmax(dim=-1), v)  # BUG


class WhereMinusInf(_Heads):
    """``torch.where(causal, scores, -inf)``, the JAX way of masking."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        scores = torch.where(causal, self.scores(q, k), float("-inf"))
        return self.merge(F.softmax(scores, dim=-1), v)


class WhereMaskReadBackwards(_Heads):
    """A "mask" that marks the future read as the positions to keep: the last query keeps
    nothing and its NaN row reaches the output."""

    BUG = "non-finite"

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = torch.where(future, self.scores(q, k), float("-inf"))
        return self.merge(F.softmax(scores, dim=-1), v)  # BUG


class WhereFullLike(_Heads):
    """``torch.where(mask, scores, torch.full_like(scores, -inf))`` with a buffer mask."""

    def __init__(self, d_model, n_head, block_size=16):
        super().__init__(d_model, n_head)
        self.register_buffer("causal", torch.ones(block_size, block_size).tril().bool())

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        scores = self.scores(q, k)
        scores = torch.where(self.causal[:T, :T], scores, torch.full_like(scores, float("-inf")))
        return self.merge(scores.softmax(-1), v)


class NullKeyPaddedMask(_Heads):
    """lucidrains' null key/value: one learned key every query may attend to, the causal mask
    padded with ``F.pad(..., value=False)`` for it."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.null_kv = nn.Parameter(torch.randn(2, n_head, 1, d_model // n_head))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv_heads(x)
        nk, nv = (t.unsqueeze(0).expand(B, -1, -1, -1) for t in self.null_kv.unbind(0))
        k, v = torch.cat((nk, k), dim=-2), torch.cat((nv, v), dim=-2)
        sim = self.scores(q, k)
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        future = F.pad(future, (1, 0), value=False)
        sim = sim.masked_fill(future, -torch.finfo(sim.dtype).max)
        return self.merge(sim.softmax(dim=-1), v)


class PaddedMaskMinusInf(_Heads):
    """Keys padded on the right with ``F.pad(scores, ..., value=-inf)`` (a fixed-size window)."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        v = F.pad(v, (0, 0, 0, 2))
        scores = F.pad(self.scores(q, k), (0, 2), value=float("-inf"))
        return self.merge(scores.softmax(-1), v)


class FullyMaskedRowsZeroed(_Heads):
    """Queries that may see nothing (here the first, by a prefix rule) give NaN after the
    softmax; the rows are set to 0 before the values, so nothing non-finite reaches the output."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        allowed = torch.ones(T, T, dtype=torch.bool).tril(-1)
        attn = self.scores(q, k).masked_fill(~allowed, float("-inf")).softmax(-1)
        attn = attn.masked_fill(~allowed.any(-1, keepdim=True), 0.0)
        return self.merge(attn, v)


class FullyMaskedRowsKept(_Heads):
    """The twin without the clean-up: the first query's NaN row reaches the output."""

    BUG = "non-finite"

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        allowed = torch.ones(T, T, dtype=torch.bool).tril(-1)
        attn = self.scores(q, k).masked_fill(~allowed, float("-inf")).softmax(-1)  # BUG
        return self.merge(attn, v)


class FillInPlaceFromInf(_Heads):
    """A mask buffer filled in place with ``fill_(-inf)`` and ``triu_``, then added."""

    def __init__(self, d_model, n_head, block_size=16):
        super().__init__(d_model, n_head)
        self.register_buffer("bias", torch.empty(block_size, block_size).fill_(float("-inf")).triu_(1))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        return self.merge((self.scores(q, k) + self.bias[:T, :T]).softmax(-1), v)


class EntropyXlogy(_Heads):
    """An attention-entropy regulariser returned beside the output, written with xlogy so that
    the masked (exactly 0) weights add 0."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        scores = self.scores(q, k).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
        attn = scores.softmax(-1)
        entropy = -torch.special.xlogy(attn, attn).sum(-1).mean()
        return self.merge(attn, v), entropy


class EntropyPLogP(_Heads):
    """The same regulariser as ``p * log p``: log(0) is -inf and 0 * -inf is NaN."""

    BUG = "non-finite"

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv_heads(x)
        scores = self.scores(q, k).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
        attn = scores.softmax(-1)
        entropy = -(attn * attn.log()).sum(-1).mean()  # BUG
        return self.merge(attn, v), entropy
