"""reference-mismatch: students compared with reference_models/m06_multi_head.py (separate query,
key and value projections, causal) at the same weights. The correct ones compute the same
function another way: ``nn.MultiheadAttention`` (one fused ``in_proj_weight``), a loop over head slices, heads folded into the batch
(B*H, T, d) with ``baddbmm``, SDPA with an explicit boolean mask. The buggy twins part from it
(heads cut as strided channels, the diagonal masked too, keys and values swapped, the scale
applied to the values), each marked ``# BUG`` where the finding belongs.

Tests run these from the repository root (``REFERENCE`` is relative to it)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

REFERENCE = "reference_models/m06_multi_head.py::MultiHeadAttention"


class _Student(nn.Module):
    REFERENCE = REFERENCE
    INIT = {"n_embd": "C", "n_head": "H", "block_size": 16}
    INPUTS = ["x=B,T,C"]


class _Separate(_Student):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.h, self.d = n_head, n_embd // n_head
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)

    def split(self, t):
        B, T, C = t.shape
        return t.view(B, T, self.h, self.d).transpose(1, 2)

    def causal(self, T):
        return torch.ones(T, T, dtype=torch.bool).tril()


# --- correct ----------------------------------------------------------------------------------------

class TorchMultiheadAttention(_Student):
    """``nn.MultiheadAttention``: q, k and v in one (3C, C) ``in_proj_weight``."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.mha = nn.MultiheadAttention(n_embd, n_head, bias=False, batch_first=True)

    def forward(self, x):
        T = x.shape[1]
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        out, _ = self.mha(x, x, x, attn_mask=future, need_weights=False)
        return out


class _FusedKeyValue(_Student):
    """A separate query projection and one (2C, C) projection for keys and values: the same
    function, its key/value weight matched to the reference's two. Left out of the corpus' lists
    (the leading underscore); test_reference.py checks the match and a jumbled twin."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.h = n_head
        self.to_q = nn.Linear(n_embd, n_embd, bias=False)
        self.to_kv = nn.Linear(n_embd, 2 * n_embd, bias=False)
        self.to_out = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        k, v = self.to_kv(x).chunk(2, dim=-1)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (self.to_q(x), k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.to_out(out.transpose(1, 2).reshape(B, T, C))


class HeadSliceLoop(_Separate):
    """One head at a time, each a slice of d columns of the projections, concatenated."""

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.query(x), self.key(x), self.value(x)
        heads = []
        for i in range(self.h):
            cols = slice(i * self.d, (i + 1) * self.d)
            s = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(self.d)
            s = s.masked_fill(~self.causal(T), float("-inf"))
            heads.append(s.softmax(-1) @ v[..., cols])
        return self.proj(torch.cat(heads, dim=-1))


class HeadsInBatchBaddbmm(_Separate):
    """Megatron's layout: heads folded into the batch, the mask added as a bias by baddbmm."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (self.split(lin(x)).reshape(B * self.h, T, self.d)
                   for lin in (self.query, self.key, self.value))
        bias = torch.zeros(T, T).masked_fill(~self.causal(T), float("-inf")).expand(B * self.h, T, T)
        s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=self.d ** -0.5)
        y = torch.bmm(s.softmax(-1), v).view(B, self.h, T, self.d)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class SDPAExplicitMask(_Separate):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.causal(T))
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


# --- buggy ------------------------------------------------------------------------------------------

class StridedHeads(_Separate):
    """Heads cut as (d, H): head i takes every H-th channel, not a block of d."""

    BUG = "reference-mismatch"

    def split(self, t):
        B, T, C = t.shape
        return t.view(B, T, self.d, self.h).permute(0, 3, 1, 2)  # BUG

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        s = (q @ k.transpose(-2, -1) / math.sqrt(self.d)).masked_fill(~self.causal(T), float("-inf"))
        y = s.softmax(-1) @ v
        return self.proj(y.permute(0, 2, 3, 1).reshape(B, T, C))


class DiagonalMaskedToo(_Separate):
    """``triu()`` without ``diagonal=1``: a token may not attend to itself."""

    BUG = "reference-mismatch"
    INPUTS = ["x=B,T,C"]

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        future = torch.ones(T, T, dtype=torch.bool).triu()
        s = s.masked_fill(future, -1e9)  # BUG
        y = s.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class KeysAndValuesSwapped(_Separate):
    BUG = "reference-mismatch"

    def forward(self, x):
        B, T, C = x.shape
        q = self.split(self.query(x))
        v, k = self.split(self.key(x)), self.split(self.value(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)  # BUG
        s = s.masked_fill(~self.causal(T), float("-inf"))
        return self.proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class ScaleOnTheOutput(_Separate):
    """The 1/sqrt(d) moved from the scores to the attention output."""

    BUG = "reference-mismatch"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        s = (q @ k.transpose(-2, -1)).masked_fill(~self.causal(T), float("-inf"))  # BUG
        y = s.softmax(-1) @ v / math.sqrt(self.d)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))
